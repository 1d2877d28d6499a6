"""Sessions that end without an edit: the entry-only estimator against intention to treat (issue 31).

A turn that touches no file makes no entry, so a session that never edits a file is invisible to an
estimator that reads sessions from the fix log's entries alone. When the memory changes whether agents edit
at all (held-back agents give up without editing more often), dropping those sessions is selection after
treatment. Here fleets are drawn as in ``evals.impact.fleets`` and each session that does not end fixed
ends with no edit with probability ``e_memory`` or ``e_holdback`` (its arm's). Both estimators run on the
same simulated store contents through the real code: ``FixEntry`` lines (a session that edited: its last
turn's entry, fixed or partial; some also have an earlier edit-less turn) and session records
(``store.sessions.record_of`` of each edit-less turn, joined per project by ``store.sessions.merge``):

- ``entry_only``: ``store.impact.sessions_of(entries)`` (what ``fixmem impact`` computed before);
- ``itt``: ``sessions_of(entries, records=...)`` (every session in its assigned arm; no entry = not fixed).

Scenarios, ``FLEETS`` fleets each (default 1,000):

- ``editless``: the coverage fleets' sizes, shares and lifts ([-0.10, 0.20] per project), with
  ``e_memory ~ U(0.1, 0.4)`` and ``e_holdback = e_memory + U(0.1, 0.3)``; the share of fleets whose 95%
  interval covers the true (intention-to-treat) lift (goal for ``itt``: >= 93%, the issue's);
- ``editless_null``: the same with every lift 0; the share whose interval excludes 0 (goal for ``itt``:
  <= 8%);
- ``editless_equal``: lifts as in ``editless``, the same edit-less share in both arms (``e ~ U(0.1, 0.5)``):
  memory does not change editing, yet the entry-only estimator measures a ratio among editors.

``python -m evals.impact.editless [--fleets N] [--seed S]`` writes ``evals/impact/results/editless.json``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from evals.impact.fleets import Fleet, draw_fleet
from store.entry import FixEntry
from store.impact import HOLDBACK, MEMORY, report, sessions_of
from store.sessions import SessionRecord, merge, record_of

RESULTS = Path(__file__).resolve().parent / "results" / "editless.json"
FLEETS = 1000
GOALS = {"editless": ("covers", 0.93), "editless_null": ("excludes_zero", 0.08)}
SHOWN = "fix-00000000000000aa"
FOLLOW = 0.3  # a session follows the fix it was shown (or shadowed) this often


def _recall(arm: str, followed: bool) -> dict[str, Any]:
    kind = "injected" if arm == MEMORY else "shadow"
    return {"arm": arm, kind: [{"id": SHOWN}], "followed": [SHOWN] if followed else []}


def _entry(n: int, project: str, session: str, ts: float, *, fixed: bool, recall: dict[str, Any]) -> FixEntry:
    return FixEntry(
        id=f"fix-{n:016x}", ts=ts, project=project, task="t", files=["a.py"], symbols=[], errors=[],
        tests=None, outcome="fixed" if fixed else "partial", solution="", tags=[], session_id=session,
        recall=recall,
    )  # fmt: skip


def editless_shares(rng: random.Random, scenario: str) -> tuple[float, float]:
    """(e_memory, e_holdback): how often a session that does not end fixed makes no edit, per arm."""
    if scenario == "editless_equal":
        e = rng.uniform(0.1, 0.5)
        return e, e
    e = rng.uniform(0.1, 0.4)
    return e, e + rng.uniform(0.1, 0.3)


def simulate(
    rng: random.Random, fleet: Fleet, shares: tuple[float, float]
) -> tuple[list[FixEntry], list[SessionRecord]]:
    """The fleet's log entries and its session records (joined per project), as the store holds them."""
    entries: list[FixEntry] = []
    turns: dict[str, list[SessionRecord]] = {}
    indices = range(len(fleet.base))
    for n in range(fleet.sessions):
        j = rng.choices(indices, weights=fleet.weight)[0]
        project, session, ts = f"p{j}", f"s{n}", float(n)
        arm = HOLDBACK if rng.random() < fleet.share else MEMORY
        fixed = rng.random() < fleet.base[j] + (fleet.lift[j] if arm == MEMORY else 0.0)
        recall = _recall(arm, rng.random() < FOLLOW)
        edited = fixed or rng.random() >= shares[0 if arm == MEMORY else 1]
        if edited:
            entries.append(_entry(n, project, session, ts + 0.5, fixed=fixed, recall=recall))
        for turn in range(rng.randint(1, 2) if not edited else int(rng.random() < 0.3)):
            record = record_of(project, session, ts + turn * 0.1, recall)  # an edit-less turn
            assert record is not None
            turns.setdefault(project, []).append(record)
    records = [r for project in sorted(turns) for r in merge([], turns[project])]
    return entries, records


def run_scenario(scenario: str, fleets: int, seed: int) -> dict[str, Any]:
    """The scenario's figures over ``fleets`` seeded fleets, for both estimators."""
    rng = random.Random(f"{seed}:{scenario}")
    tallies = {name: {"covers": 0, "excludes_zero": 0, "bias": 0.0} for name in ("entry_only", "itt")}
    no_entry = {MEMORY: [0, 0], HOLDBACK: [0, 0]}
    for _ in range(fleets):
        fleet = draw_fleet(rng, "null" if scenario == "editless_null" else "coverage")
        entries, records = simulate(rng, fleet, editless_shares(rng, scenario))
        for name, sessions in (
            ("entry_only", sessions_of(entries)),
            ("itt", sessions_of(entries, records=records)),
        ):
            result = report(sessions)
            lift = result.lifts["outcome"]
            if lift is None:
                continue
            tallies[name]["covers"] += lift.low <= fleet.true_lift <= lift.high
            tallies[name]["excludes_zero"] += lift.excludes_zero
            tallies[name]["bias"] += lift.difference - fleet.true_lift
            if name == "itt":
                for arm, summary in result.arms.items():
                    no_entry[arm][0] += summary.no_entry
                    no_entry[arm][1] += summary.sessions
    out: dict[str, Any] = {"fleets": fleets}
    for name, t in tallies.items():
        out[name] = {
            "covers_true_lift": round(t["covers"] / fleets, 4),
            "excludes_zero": round(t["excludes_zero"] / fleets, 4),
            "mean_bias_points": round(100 * t["bias"] / fleets, 2),
        }
    out["no_entry_share"] = {arm: round(k / n, 4) if n else None for arm, (k, n) in no_entry.items()}
    if scenario in GOALS:
        measure, goal = GOALS[scenario]
        figure = out["itt"]["covers_true_lift" if measure == "covers" else "excludes_zero"]
        out["goal"] = {"estimator": "itt", "measure": measure, "goal": goal}
        out["met"] = figure >= goal if measure == "covers" else figure <= goal
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.impact.editless")
    parser.add_argument("--fleets", type=int, default=FLEETS)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    scenarios = ("editless", "editless_null", "editless_equal")
    results = {
        "seed": args.seed,
        "interval": "Newcombe hybrid score (method 10), 95%",
        "estimators": {
            "entry_only": "sessions from the log's entries alone (before issue 31's fix)",
            "itt": "entries and session records: every session in its assigned arm, no entry = not fixed",
        },
        "scenarios": {s: run_scenario(s, args.fleets, args.seed) for s in scenarios},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0 if all(s.get("met", True) for s in results["scenarios"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
