"""A/B: what writing the summary file (``store.persist.summary_file``) costs an append.

Run: ``python -m bench.summary_ab [--rounds R] [--appends N] [--no-write]``; writes
``bench/results/summary_ab.json``. Each round appends ``N`` single entries (one append each) to a project
at the cap (500: every append also rotates, one atomic rewrite) and ``N`` to one of 250 entries (a plain
append), once with the summary written as shipped (``on``) and once with ``FixStore._keep_summary``
replaced by a no-op (``off``), the order alternating between rounds so that a change of the machine's
load does not favour one side. Reported: the median over rounds of the mean wall and CPU ms per append.
Wall time includes fsync (the log's) and whatever else the shared machine runs; CPU is this process's.
The difference of two such medians is within the noise of a loaded machine, so the ``on`` side also
times ``_keep_summary`` itself (summary computed, file written) around each call: ``summary_ms``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import run_main
from bench.store_bench import OWNER, PROJECT, make_entries, populated

ROUNDS = 7
APPENDS = 40


def _one(start: int, appends: int, *, summary: bool, seed: int) -> tuple[float, float, float]:
    """Mean wall and CPU seconds of ``appends`` one-entry appends to a project of ``start`` entries, and
    the mean wall seconds spent in ``_keep_summary`` (0 for the ``off`` side)."""
    spent = [0.0]
    with tempfile.TemporaryDirectory() as tmp:
        store = populated(Path(tmp), start)
        keep = store._keep_summary

        def timed(*args: Any) -> None:
            t = time.perf_counter()
            keep(*args)
            spent[0] += time.perf_counter() - t

        store._keep_summary = timed if summary else (lambda *_: None)  # type: ignore[method-assign]
        entries = make_entries(appends, seed=seed, start=20_000 + seed * appends)
        t0, c0 = time.perf_counter(), time.process_time()
        for entry in entries:
            store.append(OWNER, PROJECT, [entry])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if summary:
            assert store.summary(OWNER, PROJECT).total == min(start + appends, store.cap)
        return wall / appends, cpu / appends, spent[0] / appends


def run(rounds: int, *, appends: int = APPENDS) -> dict[str, Any]:
    samples: dict[str, dict[str, list[list[float]]]] = {
        case: {side: [[], [], []] for side in ("on", "off")} for case in ("at_cap", "below_cap")
    }
    for r in range(rounds):
        for case, start in (("at_cap", 500), ("below_cap", 250)):
            sides = ("on", "off") if r % 2 == 0 else ("off", "on")
            for side in sides:
                wall, cpu, spent = _one(start, appends, summary=side == "on", seed=r)
                samples[case][side][0].append(wall * 1000)
                samples[case][side][1].append(cpu * 1000)
                samples[case][side][2].append(spent * 1000)

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 3)

    rows = {
        case: {
            side: {"wall_ms_per_append": median(s[0]), "cpu_ms_per_append": median(s[1])}
            for side, s in sides.items()
        }
        for case, sides in samples.items()
    }
    for row in rows.values():
        row["cpu_ms_added"] = round(row["on"]["cpu_ms_per_append"] - row["off"]["cpu_ms_per_append"], 3)
        row["wall_ms_added"] = round(row["on"]["wall_ms_per_append"] - row["off"]["wall_ms_per_append"], 3)
    for case, sides in samples.items():
        rows[case]["summary_ms_per_append"] = median(sides["on"][2])
    return {
        "method": "interleaved rounds (order alternating), medians over rounds of the mean per append",
        "appends_per_round": appends,
        "samples_ms": {
            case: {side: {"wall": s[0], "cpu": s[1], "summary": s[2]} for side, s in sides.items()}
            for case, sides in samples.items()
        },
        "summary": rows,
    }


main = run_main("summary_ab", __doc__, run, runs=ROUNDS, what="side", appends=APPENDS)
"""Run the A/B, print its summary, write ``bench/results/summary_ab.json``."""

if __name__ == "__main__":
    main()
