"""Seeded simulated fleets through the pure core (``store.impact``): is the interval honest, is it powered?

A fleet is ``sessions`` agent sessions over ``projects`` projects, each session assigned to ``holdback``
with probability ``share`` (as ``fixmem.hooks.arms`` does). Project ``j`` has a base success rate ``p_j``
and a true lift ``l_j`` (memory raises the rate in some projects, does nothing or hurts in others); a
session of project ``j`` ends fixed with probability ``p_j + l_j`` in ``memory``, ``p_j`` in ``holdback``.
The fleet's true lift is ``sum_j w_j l_j`` (``w_j``: project ``j``'s share of sessions), the quantity the
pooled difference estimates. Simulated agents are shown 0-3 fixes and follow relevant ones more often than
irrelevant ones (in holdback, a shadow fix is "followed" only when the agent edits its files unaided).

Three scenarios, ``FLEETS`` fleets each (default 1,000):

- ``coverage``: random sizes (500-4,000 sessions), shares (0.1-0.5) and per-project lifts in [-0.10, 0.20];
  the share of fleets whose 95% interval covers the true lift (goal >= 93%).
- ``null``: the same with every lift 0; the share whose interval excludes 0 (goal <= 8%).
- ``power``: 4,000 sessions, 10% holdback, a true 10-point lift in every project; the share whose interval
  excludes 0 (goal >= 80%).

``python -m evals.impact.fleets [--fleets N] [--seed S]`` writes ``evals/impact/results/fleets.json``.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.impact import HOLDBACK, MEMORY, SessionOutcome, report

RESULTS = Path(__file__).resolve().parent / "results" / "fleets.json"
FLEETS = 1000
GOALS = {"coverage": 0.93, "null": 0.08, "power": 0.80}
FOLLOW_RELEVANT, FOLLOW_IRRELEVANT, UNAIDED = 0.6, 0.1, 0.15  # simulated agents' follow probabilities


@dataclass(frozen=True)
class Fleet:
    """One simulated fleet's truth: sessions, holdback share, per-project base rates, lifts and weights."""

    sessions: int
    share: float
    base: tuple[float, ...]
    lift: tuple[float, ...]
    weight: tuple[float, ...]

    @property
    def true_lift(self) -> float:
        return sum(w * lift for w, lift in zip(self.weight, self.lift, strict=True))


def draw_fleet(rng: random.Random, scenario: str) -> Fleet:
    """A fleet of ``scenario`` (``coverage``, ``null``, ``power``)."""
    projects = rng.randint(3, 12)
    raw = [rng.random() + 0.2 for _ in range(projects)]
    weight = tuple(r / sum(raw) for r in raw)
    if scenario == "power":
        base = tuple(rng.uniform(0.3, 0.6) for _ in range(projects))
        return Fleet(4000, 0.10, base, tuple(0.10 for _ in base), weight)
    base = tuple(rng.uniform(0.25, 0.7) for _ in range(projects))
    lift = tuple(0.0 if scenario == "null" else rng.uniform(-0.10, 0.20) for _ in base)
    return Fleet(rng.randint(500, 4000), rng.choice((0.1, 0.2, 0.3, 0.5)), base, lift, weight)


def simulate(rng: random.Random, fleet: Fleet) -> list[SessionOutcome]:
    """The sessions of one fleet, as ``store.impact.sessions_of`` would read them from the store."""
    out = []
    indices = range(len(fleet.base))
    for n in range(fleet.sessions):
        j = rng.choices(indices, weights=fleet.weight)[0]
        arm = HOLDBACK if rng.random() < fleet.share else MEMORY
        rate = fleet.base[j] + (fleet.lift[j] if arm == MEMORY else 0.0)
        fixed = rng.random() < rate
        shown, followed = [], []
        for k in range(rng.randint(0, 3)):
            fix = f"fix-{j:04x}{k:012x}"
            relevant = rng.random() < 0.4
            chance = (
                (FOLLOW_RELEVANT if relevant else FOLLOW_IRRELEVANT) if arm == MEMORY else UNAIDED * relevant
            )
            shown.append(fix)
            if rng.random() < chance:
                followed.append(fix)
        out.append(
            SessionOutcome(f"s{n}", f"p{j}", arm, float(n), fixed, None, fixed, tuple(shown), tuple(followed))
        )
    return out


def run_scenario(scenario: str, fleets: int, seed: int) -> dict[str, Any]:
    """The scenario's figures over ``fleets`` seeded fleets."""
    rng = random.Random(f"{seed}:{scenario}")
    covered = excluded = 0
    follow = {MEMORY: [0, 0], HOLDBACK: [0, 0]}
    for _ in range(fleets):
        fleet = draw_fleet(rng, scenario)
        result = report(simulate(rng, fleet))
        lift = result.lifts["outcome"]
        if lift is None:
            continue
        covered += lift.low <= fleet.true_lift <= lift.high
        excluded += lift.excludes_zero
        for arm, summary in result.arms.items():
            follow[arm][0] += summary.followed
            follow[arm][1] += summary.shown
    figure = covered / fleets if scenario == "coverage" else excluded / fleets
    goal = GOALS[scenario]
    met = figure >= goal if scenario != "null" else figure <= goal
    return {
        "fleets": fleets,
        "measure": {
            "coverage": "interval covers the true lift",
            "null": "interval excludes 0 (false positive)",
            "power": "interval excludes 0",
        }[scenario],
        "figure": round(figure, 4),
        "goal": goal,
        "met": met,
        "follow_rate": {arm: round(f / s, 4) if s else None for arm, (f, s) in follow.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.impact.fleets")
    parser.add_argument("--fleets", type=int, default=FLEETS)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = {
        "seed": args.seed,
        "interval": "Newcombe hybrid score (method 10), 95%",
        "scenarios": {s: run_scenario(s, args.fleets, args.seed) for s in ("coverage", "null", "power")},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0 if all(s["met"] for s in results["scenarios"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
