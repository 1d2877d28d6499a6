"""The git I/O of the git verdict source: thin calls of ``git`` that return values (``CommitDiff``s, shas).

Every decision is in ``ingest.verdicts.rules`` (pure); this module only runs ``git log``, ``git patch-id``
and ``git rev-parse`` in a repository and parses their output with ``ingest.verdicts.diffs``.
Raises GitError when git is missing, the directory is no repository, or a revision is unknown.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ingest.errors import GitError
from ingest.verdicts.diffs import LOG_FORMAT, CommitDiff, parse_log

_TIMEOUT_SECONDS = 600.0
_DEFAULT_CANDIDATES = ("main", "master", "trunk", "develop")


def run_git(repo: Path, args: Sequence[str], *, stdin: str | None = None) -> str:
    """The standard output of ``git -C repo ARGS`` (UTF-8, undecodable bytes replaced); raises GitError."""
    env = {**os.environ, "GIT_PAGER": "cat", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "-c", "core.quotepath=off", *args],
            input=stdin.encode() if stdin is not None else None,
            capture_output=True,
            timeout=_TIMEOUT_SECONDS,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitError(f"git {args[0]} failed in {repo}: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed in {repo}: {message[-1] if message else done.returncode}")
    return done.stdout.decode("utf-8", "replace")


def top_level(repo: Path) -> Path:
    """The work tree (or the git directory of a bare repository) that ``repo`` lies in."""
    if run_git(repo, ["rev-parse", "--is-bare-repository"]).strip() == "true":
        return Path(run_git(repo, ["rev-parse", "--absolute-git-dir"]).strip())
    return Path(run_git(repo, ["rev-parse", "--show-toplevel"]).strip())


def default_branch(repo: Path) -> str:
    """The default branch: ``origin/HEAD``'s target, else main/master/trunk/develop, else HEAD's."""
    try:
        return run_git(repo, ["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]).strip()
    except GitError:
        pass
    heads = set(run_git(repo, ["for-each-ref", "--format=%(refname:short)", "refs/heads"]).split())
    for name in _DEFAULT_CANDIDATES:
        if name in heads:
            return name
    return run_git(repo, ["rev-parse", "--abbrev-ref", "HEAD"]).strip()


def resolve(repo: Path, rev: str) -> str:
    """The full sha of ``rev``; raises GitError when it is unknown."""
    return run_git(repo, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"]).strip()


def other_branches(repo: Path, default: str) -> list[str]:
    """Every local and remote-tracking branch but ``default`` (and ``origin/HEAD``)."""
    names = run_git(repo, ["for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/remotes"]).split()
    return [n for n in names if n not in (default, "origin/HEAD") and not n.endswith("/HEAD")]


def log(
    repo: Path, revs: Sequence[str], *, since: float | None = None, first_parent: bool = False
) -> list[CommitDiff]:
    """The commits of ``git log REVS`` (newest first), with their normalized changed lines (``-U0``)."""
    args = ["log", "-p", "-U0", "--no-renames", "--no-color", "--no-ext-diff", f"--format={LOG_FORMAT}"]
    if since is not None:
        args.append(f"--max-age={int(since)}")
    if first_parent:
        args.append("--first-parent")
    return parse_log(run_git(repo, [*args, *revs, "--"]))


def patch_ids(repo: Path, shas: Sequence[str]) -> dict[str, str]:
    """sha -> ``git patch-id --stable`` of the commit's diff, for the non-merge commits among ``shas``."""
    if not shas:
        return {}
    patches = run_git(repo, ["show", "--no-color", "--no-ext-diff", "--format=commit %H", *shas])
    out: dict[str, str] = {}
    for line in run_git(repo, ["patch-id", "--stable"], stdin=patches).splitlines():
        patch_id, _, sha = line.partition(" ")
        if sha:
            out[sha] = patch_id
    return out
