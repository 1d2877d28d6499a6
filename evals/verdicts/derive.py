"""Derive the git-verdict dataset from a fetched git snapshot (RUN BY HAND: full histories are not in CI).

    python -m evals.verdicts.derive --git-dir /work/.mirror/pypa+pip/repo --repo pypa/pip \\
        --branch main --reverts 90 --squashes 60 | gzip -n -9 > evals/verdicts/data/pypa__pip.jsonl.gz

One JSON line per record, no commit message kept (the rules are measured with messages hidden):

- ``{"type": "commit", "sha", "parents", "ts", "authored", "files", "added", "removed", "truncated"}``: a
  commit's normalized changed lines as ``ingest.verdicts.diffs`` reads them (at most ``MAX_LINES`` a side);
- ``{"type": "revert", "revert", "reverted", "later", "earlier"}``: a commit of the default branch made by
  ``git revert`` (its subject starts with "Revert", its message says "This reverts commit <sha>": the
  ground truth; a squash body quoting a pull request's own revert is not one), the commit it names (on
  the default branch), ``later``: up to
  ``NEGATIVES`` commits after the reverted one touching one of its files that are not reverts (no such
  line), ``earlier``: up to ``NEGATIVES`` commits before the revert touching one of its files, other than
  the reverted one;
- ``{"type": "squash", "merge", "squash", "branch"}``: a pull request merged with a merge commit, replayed
  as a squash merge: ``squash`` is a synthetic commit holding ``git diff <first parent> <merge>`` (what
  "squash and merge" would have landed) and ``branch`` the pull request's own commits (2 to 12).

Reverts of merge commits and commits with no changed line are left out (counted on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ingest.errors import GitError
from ingest.verdicts.diffs import CommitDiff, parse_log
from ingest.verdicts.git import log, run_git
from ingest.verdicts.rules import reverted_shas

NEGATIVES = 4  # later (and earlier) same-file commits kept per revert
_REVERTS_GREP = "This reverts commit"


def _commit_record(commit: CommitDiff) -> dict[str, Any]:
    return {
        "type": "commit", "sha": commit.sha, "parents": list(commit.parents), "ts": commit.ts,
        "authored": commit.authored,
        "files": list(commit.files), "added": list(commit.added), "removed": list(commit.removed),
        "truncated": commit.truncated,
    }  # fmt: skip


def _shas(repo: Path, args: Sequence[str]) -> list[str]:
    return run_git(repo, ["log", "--format=%H", *args]).split()


def _same_file(repo: Path, branch: str, commit: CommitDiff, *, after: bool) -> list[str]:
    """Non-merge shas on ``branch`` touching ``commit``'s files after (or before) it, nearest first."""
    files = list(commit.files)[:20]
    if after:
        shas = _shas(repo, ["--no-merges", "--reverse", f"{commit.sha}..{branch}", "--", *files])
    else:
        shas = _shas(repo, ["--no-merges", "-n", "40", f"{commit.sha}^", "--", *files])
    return shas[:40]


def _on_branch(repo: Path, sha: str, branch: str) -> bool:
    try:
        run_git(repo, ["merge-base", "--is-ancestor", sha, branch])
    except GitError:
        return False
    return True


def _is_revert(repo: Path, sha: str) -> bool:
    return _REVERTS_GREP in run_git(repo, ["log", "-1", "--format=%B", sha])


def derive_reverts(repo: Path, branch: str, limit: int) -> Iterator[dict[str, Any]]:
    """The revert records (and the commits they name), newest revert first."""
    text = run_git(repo, ["log", "--no-merges", f"--grep={_REVERTS_GREP}", "--format=%x1e%H%x1f%B", branch])
    kept = skipped = 0
    for record in text.split("\x1e"):
        if kept >= limit or not record.strip():
            continue
        sha, _, message = record.partition("\x1f")
        names = reverted_shas(message) if message.startswith("Revert") else []  # not a squash body's quote
        if len(names) == 1 and not _on_branch(repo, names[0], branch):
            names = []  # a pull request's own commit, reverted inside it
        try:
            commits = log(repo, ["--no-walk=unsorted", sha.strip(), *names[:1]]) if len(names) == 1 else []
        except GitError:  # the reverted commit is not in this history (a branch never merged)
            commits = []
        if len(commits) != 2 or commits[1].is_merge or not (commits[0].added or commits[0].removed):
            skipped += 1
            continue
        revert, fix = commits
        if not (fix.added or fix.removed) or fix.ts > revert.ts:
            skipped += 1
            continue
        later = [s for s in _same_file(repo, branch, fix, after=True) if s != revert.sha]
        later = [s for s in later if not _is_revert(repo, s)][:NEGATIVES]
        earlier = [s for s in _same_file(repo, branch, revert, after=False) if s != fix.sha][:NEGATIVES]
        for commit in (fix, revert, *log(repo, ["--no-walk=unsorted", *later, *earlier])):
            yield _commit_record(commit)
        yield {
            "type": "revert",
            "revert": revert.sha,
            "reverted": fix.sha,
            "later": later,
            "earlier": earlier,
        }
        kept += 1
    print(f"reverts: {kept} kept, {skipped} left out (merge, empty or unknown)", file=sys.stderr)


def _squash_commit(repo: Path, merge: str, first_parent: str, ts: float) -> CommitDiff:
    patch = run_git(repo, ["diff", "-U0", "--no-renames", "--no-color", first_parent, merge])
    fake = f"\x1e{'0' * 40}\x1f{first_parent}\x1f{int(ts)}\x1f{int(ts)}\x1f\x1f{patch}"
    commit = parse_log(fake)[0]
    return CommitDiff(
        sha="squash-" + merge, parents=(first_parent,), ts=ts, authored=ts, files=commit.files,
        added=commit.added, removed=commit.removed, truncated=commit.truncated,
    )  # fmt: skip


def derive_squashes(repo: Path, branch: str, limit: int) -> Iterator[dict[str, Any]]:
    """Squash records: merged pull requests of 2..12 commits, newest first."""
    text = run_git(repo, ["log", "--merges", "--first-parent", "--format=%H %P %ct", "-n", "3000", branch])
    kept = 0
    for line in text.splitlines():
        parts = line.split()
        if kept >= limit or len(parts) != 4:
            continue
        merge, first, second, ts = parts
        shas = _shas(repo, ["--no-merges", f"{first}..{second}"])
        if not 2 <= len(shas) <= 12 or len(_shas(repo, [f"{first}..{second}"])) != len(shas):
            continue
        branch_commits = [c for c in log(repo, ["--no-walk=unsorted", *shas]) if c.added or c.removed]
        squash = _squash_commit(repo, merge, first, float(ts))
        if len(branch_commits) < 2 or not (squash.added or squash.removed) or squash.truncated:
            continue
        for commit in (squash, *branch_commits):
            yield _commit_record(commit)
        yield {
            "type": "squash",
            "merge": merge,
            "squash": squash.sha,
            "branch": [c.sha for c in branch_commits],
        }
        kept += 1


def main(argv: Sequence[str] | None = None) -> int:
    """Print the dataset of one repository as JSON lines (each commit once)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", type=Path, required=True)
    parser.add_argument("--repo", required=True, help="owner/name, written in the header line")
    parser.add_argument("--branch", required=True, help="the default branch")
    parser.add_argument("--reverts", type=int, default=90)
    parser.add_argument("--squashes", type=int, default=60)
    args = parser.parse_args(argv)
    head = run_git(args.git_dir, ["rev-parse", args.branch]).strip()
    print(json.dumps({"type": "header", "repo": args.repo, "branch": args.branch, "head": head}))
    seen: set[str] = set()
    records = [*derive_reverts(args.git_dir, args.branch, args.reverts)]
    records += derive_squashes(args.git_dir, args.branch, args.squashes)
    for record in records:
        if record["type"] == "commit":
            if record["sha"] in seen:
                continue
            seen.add(record["sha"])
        print(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
