"""Agent-side outcome against an independent verdict (``python -m evals.extraction.verdicts PATH...``).

For every run under the paths that carries a verdict beside it (a ``report.json`` with ``resolved`` next
to a trajectory, as benchmark harnesses write it), the extracted entry's ``outcome`` is set against the
verdict. Reported: ``fixed`` precision (the share of turns labelled ``fixed`` that the verdict resolved)
with its 95% Wilson interval, and the share of resolved turns labelled ``fixed``. Goal (issue #16):
precision >= 0.90 while labelling >= 60% of resolved turns ``fixed``; with fewer than ``MIN_TURNS``
turns the goal is **unmeasured** and the report says so.

Only the verdict is read here; the outcome is ``workers.extraction.extract``'s, from the log alone.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ingest.importers import import_file, iter_files
from workers.extraction import extract

MIN_TURNS = 100
GOAL_PRECISION = 0.90
GOAL_FIXED_SHARE = 0.60


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (95% for ``z = 1.96``); None for no trials."""
    if trials <= 0:
        return None
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


@dataclass(frozen=True)
class Judged:
    """One turn: where it came from, the extracted outcome and the independent verdict."""

    source: str
    outcome: str
    resolved: bool


def agreement(turns: Sequence[Judged]) -> dict[str, Any]:
    """Counts per outcome, ``fixed`` precision with its Wilson interval, share of resolved labelled
    ``fixed``, and whether the goal is measured (``MIN_TURNS`` turns) and met."""
    fixed = [t for t in turns if t.outcome == "fixed"]
    resolved = [t for t in turns if t.resolved]
    hits = sum(t.resolved for t in fixed)
    precision = round(hits / len(fixed), 4) if fixed else None
    share = round(sum(t.outcome == "fixed" for t in resolved) / len(resolved), 4) if resolved else None
    measured = len(turns) >= MIN_TURNS
    by_outcome = {
        outcome: {"turns": len(rows), "resolved": sum(t.resolved for t in rows)}
        for outcome in ("fixed", "partial", "unverified")
        if (rows := [t for t in turns if t.outcome == outcome])
    }
    return {
        "turns": len(turns),
        "resolved": len(resolved),
        "by_outcome": by_outcome,
        "fixed_precision": precision,
        "fixed_precision_wilson95": wilson(hits, len(fixed)),
        "resolved_labelled_fixed": share,
        "goal": (
            "unmeasured: fewer than 100 turns"
            if not measured
            else "met"
            if precision is not None
            and share is not None
            and precision >= GOAL_PRECISION
            and share >= GOAL_FIXED_SHARE
            else "not met"
        ),
    }


def _verdict_beside(log: Path) -> bool | None:
    report = log.parent / "report.json"
    if not report.is_file():
        return None
    data = orjson.loads(report.read_bytes())
    value = data.get("resolved") if isinstance(data, dict) else None
    return value if isinstance(value, bool) else None


def judge(paths: Iterable[Path]) -> list[Judged]:
    """Every single-turn run under ``paths`` with a verdict beside it, with its extracted outcome."""
    turns: list[Judged] = []
    for path in iter_files(list(paths)):
        resolved = _verdict_beside(path)
        if resolved is None:
            continue
        events = import_file(path, owner="eval").events
        if len(events) != 1:
            continue  # a verdict is about one run; a multi-turn log cannot be matched to it
        entry = extract(events[0]).entry
        turns.append(Judged(str(path), entry.outcome if entry else "unverified", resolved))
    return turns


if __name__ == "__main__":
    judged = judge([Path(p) for p in sys.argv[1:]])
    print(orjson.dumps({"agreement": agreement(judged), "turns": [vars(t) for t in judged]},
                       option=orjson.OPT_INDENT_2).decode())  # fmt: skip
