"""The link form of ``fixmem verdict``: what a CI job knows (a commit, its diff, JUnit reports) as a link.

I/O: reads the JUnit files and asks ``git`` for the commit's changed files and lines (``ingest.links.
diff_hunks``) when the commit is in the repository the command runs in; ``ingest.junit`` parses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from fixmem.errors import CliError, ExitCode

GIT_TIMEOUT_SECONDS = 30
_LINK_OPTIONS = [
    click.option("--commit", default="", help="Link form: the commit the judge ran on (a sha, HEAD, a tag)."),
    click.option("--branch", default="", help="Link form: its branch (shown with the verdict)."),
    click.option("--session", default="", help="Link form: the agent session that made the fix."),
    click.option("--file", "files", multiple=True, help="Link form: a file the judged change touched."),
    click.option("--since", type=float, default=None, help="Link form: only turns at or after (unix s)."),
    click.option("--until", type=float, default=None, help="Link form: only turns at or before (unix s)."),
    click.option(
        "--junit",
        "junit",
        multiple=True,
        type=click.Path(path_type=Path, dir_okay=False),
        help="A JUnit XML report of the CI run (pytest, jest-junit, gotestsum, nextest; repeat): source "
        "ci, outcome per entry by coverage.",
    ),
    click.option(
        "--repo",
        type=click.Path(path_type=Path, file_okay=False),
        default=Path("."),
        help="The git checkout the commit's files and lines are read from (default: here).",
    ),
    click.option(
        "--print",
        "print_body",
        is_flag=True,
        help="Print the body for POST /api/verdicts instead of publishing (CI runners without Redis).",
    ),
]


def link_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with the link form's options (``--commit``, ``--junit``, …)."""
    for option in reversed(_LINK_OPTIONS):
        command = option(command)
    return command


_DIFF_TREE = ("diff-tree", "-r", "--root", "-m", "--first-parent", "--no-commit-id", "--no-color")


def git_change(repo: Path, commit: str) -> tuple[list[str], list[str]] | None:
    """The files ``commit`` changed and its ``hunks`` (against its first parent), or None when ``repo`` is
    no git repository holding it."""
    from ingest.links import MAX_LINK_FILES, diff_hunks  # noqa: PLC0415 - pydantic: only when it runs

    names = _git(repo, *_DIFF_TREE, "--name-only", commit)
    patch = _git(repo, *_DIFF_TREE, "-p", "-U0", "--no-ext-diff", commit)
    if names is None or patch is None:
        return None
    files = list(dict.fromkeys(n for n in names.splitlines() if n.strip()))[:MAX_LINK_FILES]
    return files, diff_hunks(patch)


def resolve_commit(repo: Path, commit: str) -> str:
    """``commit`` as a full sha when ``git`` in ``repo`` knows it (``HEAD``, a tag, an abbreviation), else
    as given (the schema then checks it is hex)."""
    if not commit:
        return ""
    full = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}")
    return full.strip() if full else commit


def _git(repo: Path, *args: str) -> str | None:
    from ingest.git_place import git_output  # noqa: PLC0415

    return git_output(str(repo), *args, timeout=GIT_TIMEOUT_SECONDS)


def junit_fields(paths: Sequence[Path]) -> tuple[dict[str, Any], str, bool]:
    """The link's ``tests``/``failed`` from JUnit reports, their summary line, and whether any failed.
    Raises CliError (exit 66 for a missing file, 65 for one that is no JUnit report)."""
    from ingest.junit import JUnitError, merge, parse_junit  # noqa: PLC0415

    runs = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}", ExitCode.NOT_FOUND) from exc
        try:
            runs.append(parse_junit(data, source=str(path)))
        except JUnitError as exc:
            raise CliError(str(exc), ExitCode.DATA_ERROR) from exc
    run = merge(runs)
    return run.link_fields(), run.summary(), bool(run.failed)


def build_link(
    *,
    commit: str,
    branch: str,
    session: str,
    files: Sequence[str],
    since: float | None,
    until: float | None,
    repo: Path,
) -> dict[str, Any]:
    """The link's fields from the options; with a commit ``git`` knows, its files and hunks added."""
    link: dict[str, Any] = {"commit": commit, "branch": branch, "session_id": session, "files": list(files)}
    if since is not None:
        link["since"] = since
    if until is not None:
        link["until"] = until
    if commit:
        change = git_change(repo, commit)
        if change is not None:
            link["files"] = link["files"] or change[0]
            link["hunks"] = change[1]
    return {k: v for k, v in link.items() if v not in ("", [])}
