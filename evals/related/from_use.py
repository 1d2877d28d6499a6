"""``python -m evals.related.from_use``: does recall that learns from use answer the start of a task better?

Each repository of ``evals/related`` is replayed oldest first into a fresh real store, as ``run.py``
replays it, twice: with learning from use on and off (``FixStore(learn_from_use=...)``). At each task
commit the task-start query (the full task text) is asked; what comes back is *injected* into a
simulated agent session (the commit's), and the agent *follows* exactly the injected fixes that are
truly related (the eval's gold: an earlier commit that changed a same file or function). The commit's
turn then carries the session's record (``harness_meta.recall``: arm ``memory``, the ids injected and
followed) through the real extractor into the store, so the next queries see how each fix was used.

Measured on the later half of each repository's tasks (the first half is where the memory learns):
task-start precision (returned fixes that are related / returned) and hits (tasks with a related past
fix that got one in the top 5, same file and same function), on and off. The goal (issue 31): precision
at least 30% higher (relative) with hits within 5% of the replay with learning off.

    python -m evals.related.from_use            # the table
    python -m evals.related.from_use --write    # and evals/related/results/from_use.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.related.core import OWNER, WARMUP, Commit, K, Repo, Tally, load_repos, related, turn_event
from ingest.schema import validate_event
from store import FixStore
from workers.extraction import Limits, extract

RESULTS = Path(__file__).parent / "results" / "from_use.json"
ROTATION_CAP = 500  # as ``run.ROTATION_CAP``: what a project keeps


def session_record(shown: Sequence[str], followed: Sequence[str]) -> dict[str, Any]:
    """The session's ``harness_meta.recall``: a ``memory`` session shown ``shown`` at task start (the
    harness surface, closely related tier), following ``followed``."""
    return {
        "arm": "memory",
        "injected": [{"id": i, "surface": "harness", "tier": "close"} for i in shown],
        "shadow": [],
        "followed": list(followed),
    }


def replay(repo: Repo, workdir: Path, *, learn: bool, limit: int | None = None) -> list[dict[str, Any]]:
    """One repository's task-start queries in time order, with what came back and what was related."""
    now = [0.0]
    store = FixStore(workdir, cap=ROTATION_CAP, clock=lambda: now[0], learn_from_use=learn)
    earlier: list[Commit] = []  # the commits whose entries the store holds
    sha_of: dict[str, str] = {}  # entry id -> commit sha
    records: list[dict[str, Any]] = []
    commits = repo.commits[:limit] if limit else repo.commits
    for position, commit in enumerate(commits):
        now[0] = float(commit.ts)
        shown: list[str] = []
        followed: list[str] = []
        if position >= WARMUP and commit.is_task and earlier:
            same_fn, same_file = related(commit, earlier)
            recalled = store.recall(OWNER, repo.project_key, commit.text, k=K, now=now[0])
            shown = [r.entry.id for r in recalled]
            followed = [i for i in shown if sha_of.get(i) in same_file]
            records.append(
                {
                    "sha": commit.sha[:10],
                    "returned": [sha_of.get(i, "?")[:10] for i in shown],
                    "same_function": sorted(s[:10] for s in same_fn),
                    "same_file": sorted(s[:10] for s in same_file),
                    "reasons": [r.reasons.use for r in recalled],
                }
            )
        event = turn_event(repo, commit)
        if shown:
            event["session_id"] = commit.sha
            event["harness_meta"]["recall"] = session_record(shown, followed)
        extracted = extract(validate_event(event), enabled=True, limits=Limits())
        if extracted.entry is None:
            continue
        store.append(OWNER, repo.project_key, [extracted.entry])
        sha_of[extracted.entry.id] = commit.sha
        earlier.append(commit)
    return records


def tally(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``Tally`` of ``records`` (task-start queries) as a dict."""
    cell = Tally()
    for record in records:
        cell.add(record["returned"], frozenset(record["same_function"]), frozenset(record["same_file"]))
    return cell.as_dict()


def evaluate(repos: Sequence[Repo], limit: int | None = None) -> dict[str, Any]:
    """Both replays of every repository; the later half's figures, per repository and over all."""
    halves: dict[str, dict[str, list[dict[str, Any]]]] = {"on": {}, "off": {}}
    with tempfile.TemporaryDirectory(prefix="fixmem-eval-from-use-") as tmp:
        for mode in ("off", "on"):
            for repo in repos:
                workdir = Path(tmp) / mode / repo.name.replace("/", "__")
                records = replay(repo, workdir, learn=mode == "on", limit=limit)
                halves[mode][repo.name] = records
    out: dict[str, Any] = {"k": K, "warmup": WARMUP, "repos": {}, "later_half": {}, "first_half": {}}
    for mode in ("off", "on"):
        later: list[dict[str, Any]] = []
        first: list[dict[str, Any]] = []
        for repo in repos:
            records = halves[mode][repo.name]
            cut = len(records) // 2
            first += records[:cut]
            later += records[cut:]
            out["repos"].setdefault(repo.name, {})[mode] = tally(records[cut:])
        out["later_half"][mode] = tally(later)
        out["first_half"][mode] = tally(first)
    out["per_fix_bound"] = per_fix_bound([halves["off"][r.name] for r in repos])
    out["by_prior_use"] = by_prior_use([halves["off"][r.name] for r in repos])
    off, on = out["later_half"]["off"], out["later_half"]["on"]
    out["precision_gain"] = _relative(on["precision"], off["precision"])
    out["hit_file_change"] = _relative(on["hit_file"], off["hit_file"])
    out["hit_fn_change"] = _relative(on["hit_fn"], off["hit_fn"])
    out["goal_met"] = (
        out["precision_gain"] is not None
        and out["precision_gain"] >= 0.30
        and all(abs(out[k] or 0.0) <= 0.05 for k in ("hit_file_change", "hit_fn_change"))
    )
    return out


def per_fix_bound(records: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any]:
    """The most any rule on a fix's own use can gain: on the learning-off replay (``records``: each
    repository's, in time order), drop from the later half's answers every fix shown at least ``s`` times
    before and followed in less than ``t`` of them, for each (s, t) of a small grid; the best precision
    gain whose hits (same file) stay within 5%. Dropping is the limit of a multiplier: it ignores the
    feedback (a dropped fix is not shown again), so it bounds what sinking can do, not what it does."""
    best: dict[str, Any] = {"precision_gain": 0.0, "min_shown": None, "below_rate": None}
    base = _dropping(records, 10**9, 0.0)
    for min_shown in (1, 2, 3, 4):
        for below in (0.01, 0.2, 0.34, 0.5, 0.67):
            precision, hits = _dropping(records, min_shown, below)
            gain = (precision - base[0]) / base[0]
            if abs(hits - base[1]) <= 0.05 * base[1] and gain > best["precision_gain"]:
                best = {"precision_gain": round(gain, 4), "min_shown": min_shown, "below_rate": below}
    return best


def by_prior_use(records: Sequence[Sequence[dict[str, Any]]]) -> dict[str, dict[str, int]]:
    """Why a per-fix rule cannot do much: the later halves' returned fixes of the learning-off replay,
    related or not, by what the simulated agent had done with that fix before — never shown (``new``),
    shown and never followed, or followed by some earlier task. Only the unrelated ones a rule can see
    (``never_followed``) can be dropped on the fix's own evidence."""
    out = {"related": dict.fromkeys(_PRIOR, 0), "unrelated": dict.fromkeys(_PRIOR, 0)}
    for repo in records:
        shown: dict[str, int] = {}
        followed: dict[str, int] = {}
        for i, record in enumerate(repo):
            gold = set(record["same_file"])
            for s in record["returned"]:
                if i >= len(repo) // 2:
                    prior = _PRIOR[0] if not shown.get(s) else _PRIOR[2] if followed.get(s) else _PRIOR[1]
                    out["related" if s in gold else "unrelated"][prior] += 1
            for s in record["returned"]:
                shown[s] = shown.get(s, 0) + 1
                followed[s] = followed.get(s, 0) + (s in gold)
    return out


_PRIOR = ("new", "never_followed", "followed_before")


def _dropping(records: Sequence[Sequence[dict[str, Any]]], min_shown: int, below: float) -> tuple[float, int]:
    """(precision, file hits) of the later halves with the fixes ``per_fix_bound`` drops left out."""
    returned = relevant = hits = 0
    for repo in records:
        shown: dict[str, int] = {}
        followed: dict[str, int] = {}
        for i, record in enumerate(repo):
            gold = set(record["same_file"])
            if i >= len(repo) // 2:
                kept = [
                    s
                    for s in record["returned"]
                    if shown.get(s, 0) < min_shown or followed.get(s, 0) >= below * shown[s]
                ]
                returned += len(kept)
                relevant += sum(s in gold for s in kept)
                hits += any(s in gold for s in kept)
            for s in record["returned"]:
                shown[s] = shown.get(s, 0) + 1
                followed[s] = followed.get(s, 0) + (s in gold)
    return (relevant / returned if returned else 0.0), hits


def _relative(new: float | None, old: float | None) -> float | None:
    return None if new is None or not old else round((new - old) / old, 4)


def table(result: dict[str, Any]) -> str:
    """The later half's figures, off and on, per repository and over all."""
    lines = [f"{'later half, task start':40} {'learning':8} {'P':>6} {'file hits':>10} {'fn hits':>9}"]
    rows = [(name, cells) for name, cells in result["repos"].items()]
    rows.append(("all", result["later_half"]))
    for name, cells in rows:
        for mode in ("off", "on"):
            t = cells[mode]
            lines.append(
                f"{name:40} {mode:8} {t['precision'] or 0:6.3f} {t['hit_file']:>4}/{t['with_file']:<5}"
                f" {t['hit_fn']:>3}/{t['with_fn']:<5}"
            )
    lines.append(
        f"precision {result['precision_gain']:+.1%}, file hits {result['hit_file_change']:+.1%}, "
        f"function hits {result['hit_fn_change']:+.1%}; goal met: {result['goal_met']}"
    )
    bound = result["per_fix_bound"]
    lines.append(
        f"bound of any rule on a fix's own use (drop it, hits within 5%): precision "
        f"{bound['precision_gain']:+.1%} (shown >= {bound['min_shown']}, followed < {bound['below_rate']})"
    )
    unrelated = result["by_prior_use"]["unrelated"]
    lines.append(
        f"unrelated answers of the later half: {unrelated['new']} never shown before, "
        f"{unrelated['never_followed']} shown and never followed, {unrelated['followed_before']} followed "
        "by an earlier task"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.related.from_use", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the first 120 commits of each repository")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name} under results/")
    args = parser.parse_args(argv)
    result = evaluate(load_repos(), limit=120 if args.quick else None)
    print(table(result))
    if args.write:
        RESULTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
