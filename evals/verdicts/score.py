"""Score git's verdict rules on real history, messages hidden (``python -m evals.verdicts.score``).

Over the committed derived data (``data/*.jsonl.gz``, made by hand with ``derive.py``):

- **Reverts by content** (``ingest.verdicts.rules.reverted_by_content`` / ``undoes``): every revert the
  "This reverts commit" line names is a positive: the rule must pick the reverted commit among it and
  the ``earlier`` same-file commits (another pick is a wrong link: a false positive and a miss). Every
  ``later`` same-file commit that is no revert is a negative: the rule must not say it undoes the fix.
  recall = reverts linked right / reverts; precision = right links / everything the rule claimed.
- **Squash merges** (``link_branch``, no patch-ids: a squash has none in common): each pull request
  commit, replayed as an agent's commit on a branch holding the pull request's commits, is linked among
  every replayed squash commit of its repository at or after its author time: right (its own pull
  request), wrong (another), abstained (none).

Halves: a case is in ``tune`` when the first 8 hex digits of sha256(its revert's or merge's sha) are even,
else ``held_out``. ``--tune`` searches the rules' figures on the tuning half only (recall first under
precision >= 0.95; squashes: most right with <= 2% wrong; ties: the strictest figures); ``--write`` writes
``results/git.json``. Pure but for reading the
data files; no clock.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ingest.verdicts.diffs import CommitDiff
from ingest.verdicts.rules import SQUASH, UNDO, SquashRule, UndoRule, link_branch, reverted_by_content, undoes

DATA = Path(__file__).parent / "data"
RESULTS = Path(__file__).parent / "results" / "git.json"
GOALS = {"revert_recall": 0.90, "revert_precision": 0.95, "squash_right": 0.90, "squash_wrong_max": 0.02}


@dataclass(frozen=True)
class Repo:
    """One repository's derived data: commits by sha, revert cases, squash cases."""

    name: str
    head: str
    commits: dict[str, CommitDiff]
    reverts: list[dict[str, Any]]
    squashes: list[dict[str, Any]]


def half(sha: str) -> str:
    """``tune`` or ``held_out``: the parity of the first 8 hex digits of sha256(sha)."""
    return "tune" if int(hashlib.sha256(sha.encode()).hexdigest()[:8], 16) % 2 == 0 else "held_out"


def _commit(record: dict[str, Any]) -> CommitDiff:
    return CommitDiff(
        sha=record["sha"], parents=tuple(record.get("parents", ())), ts=record["ts"],
        authored=record["authored"], files=tuple(record["files"]),
        added=tuple(record["added"]), removed=tuple(record["removed"]), truncated=record["truncated"],
    )  # fmt: skip


def load_repo(lines: Iterable[str]) -> Repo:
    """A repository's data from its JSON lines."""
    header: dict[str, Any] = {}
    commits: dict[str, CommitDiff] = {}
    reverts: list[dict[str, Any]] = []
    squashes: list[dict[str, Any]] = []
    for line in lines:
        record = json.loads(line)
        kind = record["type"]
        if kind == "header":
            header = record
        elif kind == "commit":
            commits[record["sha"]] = _commit(record)
        else:
            (reverts if kind == "revert" else squashes).append(record)
    return Repo(header.get("repo", "?"), header.get("head", ""), commits, reverts, squashes)


def load(data: Path = DATA) -> list[Repo]:
    """Every repository under ``data`` (``*.jsonl.gz``), by file name."""
    repos = []
    for path in sorted(data.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            repos.append(load_repo(handle))
    return repos


def score_reverts(repos: Sequence[Repo], rule: UndoRule, split: str | None) -> dict[str, Any]:
    """Recall and precision of reverts by content over the cases of ``split`` (None: all)."""
    cases = right = wrong = false_alarms = negatives = 0
    per_repo: dict[str, int] = {}
    for repo in repos:
        for case in repo.reverts:
            if split is not None and half(case["revert"]) != split:
                continue
            cases += 1
            per_repo[repo.name] = per_repo.get(repo.name, 0) + 1
            revert, fix = repo.commits[case["revert"]], repo.commits[case["reverted"]]
            pick = reverted_by_content(revert, [fix, *(repo.commits[s] for s in case["earlier"])], rule)
            right += pick is not None and pick.sha == fix.sha
            wrong += pick is not None and pick.sha != fix.sha
            for sha in case["later"]:
                negatives += 1
                false_alarms += undoes(fix, repo.commits[sha], rule)
    claimed = right + wrong + false_alarms
    return {
        "reverts": cases, "repositories": per_repo, "right": right, "wrong_link": wrong,
        "missed": cases - right,
        "negatives": negatives, "false_alarms": false_alarms,
        "recall": round(right / cases, 4) if cases else None,
        "precision": round(right / claimed, 4) if claimed else None,
    }  # fmt: skip


def score_squashes(repos: Sequence[Repo], rule: SquashRule, split: str | None) -> dict[str, Any]:
    """Right / wrong / abstained links of pull-request commits to their replayed squash commit."""
    right = wrong = abstained = 0
    pulls = 0
    for repo in repos:
        landed = [repo.commits[case["squash"]] for case in repo.squashes]
        for case in repo.squashes:
            if split is not None and half(case["merge"]) != split:
                continue
            pulls += 1
            links = link_branch([repo.commits[sha] for sha in case["branch"]], landed, None, rule)
            for sha in case["branch"]:
                pick = links[sha][0] if sha in links else None
                if pick is None:
                    abstained += 1
                elif pick.sha == case["squash"]:
                    right += 1
                else:
                    wrong += 1
    total = right + wrong + abstained
    return {
        "pull_requests": pulls, "commits": total, "right": right, "wrong": wrong, "abstained": abstained,
        "right_share": round(right / total, 4) if total else None,
        "wrong_share": round(wrong / total, 4) if total else None,
    }  # fmt: skip


def tune_undo(repos: Sequence[Repo]) -> UndoRule:
    """The revert rule best on the tuning half: highest recall with precision >= the goal, then precision."""
    best: tuple[float, ...] | None = None
    chosen = UNDO
    grid = itertools.product((0.5, 0.6, 0.7, 0.8, 0.9), (0.0, 0.3, 0.5, 0.7), (1, 2, 3), (1, 3, 5))
    for coverage, purity, lines, chars in grid:
        rule = UndoRule(coverage, purity, lines, chars)
        got = score_reverts(repos, rule, "tune")
        precision, recall = got["precision"] or 0.0, got["recall"] or 0.0
        rank = (
            recall if precision >= GOALS["revert_precision"] else -1.0,
            precision,
            coverage,
            purity,
            chars,
            lines,
        )
        if best is None or rank > best:
            best, chosen = rank, rule
    return chosen


def tune_squash(repos: Sequence[Repo]) -> SquashRule:
    """The squash rule best on the tuning half: fewest wrong under the goal's share, then most right."""
    best: tuple[float, ...] | None = None
    chosen = SQUASH
    for share, margin, lines, chars in itertools.product(
        (0.5, 0.6, 0.7, 0.8, 0.9), (0.0, 0.1, 0.2), (1, 2, 3), (1, 3, 5)
    ):
        rule = SquashRule(share, margin, lines, chars)
        got = score_squashes(repos, rule, "tune")
        ok = (got["wrong_share"] or 0.0) <= GOALS["squash_wrong_max"]
        rank = (
            (got["right_share"] or 0.0) if ok else -1.0,
            -(got["wrong_share"] or 0.0),
            share,
            margin,
            chars,
            lines,
        )
        if best is None or rank > best:
            best, chosen = rank, rule
    return chosen


def report(repos: Sequence[Repo], undo: UndoRule = UNDO, squash: SquashRule = SQUASH) -> dict[str, Any]:
    """The full report: both rules' figures, per half, with the data's provenance."""
    return {
        "data": {
            r.name: {"head": r.head, "reverts": len(r.reverts), "squashes": len(r.squashes)} for r in repos
        },
        "goals": GOALS,
        "undo_rule": asdict(undo),
        "squash_rule": asdict(squash),
        "reverts": {s or "all": score_reverts(repos, undo, s) for s in ("tune", "held_out", None)},
        "squashes": {s or "all": score_squashes(repos, squash, s) for s in ("tune", "held_out", None)},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report (``--tune``: with the rules tuned on the tuning half; ``--write``: to results/)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="search the rules on the tuning half first")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name} under results/")
    args = parser.parse_args(argv)
    repos = load()
    undo, squash = (tune_undo(repos), tune_squash(repos)) if args.tune else (UNDO, SQUASH)
    text = json.dumps(report(repos, undo, squash), indent=2) + "\n"
    if args.write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
