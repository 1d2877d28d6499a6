"""A/B: rotation with slack (issue [hot-path]): append cost at the cap with and without slack, same run.

Run: ``python -m bench.slack_ab [--runs R] [--no-write]``; writes ``bench/results/slack_ab.json``. Each round,
for each slack in ``SLACKS`` in turn (the order rotates between rounds so that a change of the machine's
load does not favour one side), a store at the cap (500 entries, ``bench.store_bench``'s generator) takes
``APPENDS`` one-entry appends: without slack every one of them rotates and rewrites the log; with slack S
the lines stay on disk and the log is rewritten once per S + 1 appends. Reported: the median over rounds of
the mean wall and CPU ms per append (wall includes the log's fsync and the shared machine's other work; CPU
is this process's), and a cold read of the log as the last append left it (a fresh store: parse, rotate
on read, build the view), median over rounds.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import run_main
from bench.store_bench import OWNER, PROJECT, make_entries, populated
from store import FixStore
from store.paths import project_files

ROUNDS = 5
APPENDS = 120
CAP = 500
SLACKS = (0, 50, 100)


def _side(slack: int, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        populated(Path(tmp), CAP, cap=CAP)
        store = FixStore(tmp, cap=CAP, slack=slack)
        entries = make_entries(APPENDS, seed=seed, start=40_000 + seed * APPENDS)
        t0, c0 = time.perf_counter(), time.process_time()
        for entry in entries:
            store.append(OWNER, PROJECT, [entry])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        t1 = time.perf_counter()
        kept = len(FixStore(tmp, cap=CAP).read(OWNER, PROJECT).entries)
        cold = time.perf_counter() - t1
        assert kept == CAP
        lines = len(project_files(store.root, OWNER, PROJECT).log.read_bytes().splitlines())
        return {"wall_ms": wall / APPENDS * 1000, "cpu_ms": cpu / APPENDS * 1000, "cold_read_ms": cold * 1000,
                "lines_on_disk": lines}  # fmt: skip


def run(rounds: int) -> dict[str, Any]:
    samples: dict[int, list[dict[str, float]]] = {s: [] for s in SLACKS}
    for r in range(rounds):
        order = SLACKS[r % len(SLACKS) :] + SLACKS[: r % len(SLACKS)]
        for slack in order:
            samples[slack].append(_side(slack, seed=r))
    rows = {
        f"slack_{slack}": {
            key: round(statistics.median(s[key] for s in runs), 3)
            for key in ("wall_ms", "cpu_ms", "cold_read_ms")
        }
        for slack, runs in samples.items()
    }
    return {
        "method": "interleaved rounds (order rotating), medians over rounds of the mean per append",
        "cap": CAP,
        "appends_per_round": APPENDS,
        "samples": {f"slack_{s}": runs for s, runs in samples.items()},
        "summary": {"rows": rows},
    }


main = run_main("slack_ab", __doc__, run, runs=ROUNDS, what="slack", cap=CAP, appends=APPENDS)
"""Run the A/B, print its summary, write ``bench/results/slack_ab.json``."""

if __name__ == "__main__":
    main()
