"""A/B: what folding the sessions of rotated entries into the record file costs an append (decision 0065).

Run: ``python -m bench.sessions_fold_ab [--rounds R] [--appends N] [--no-write]``; writes
``bench/results/sessions_fold_ab.json``. A hook-driven project: every entry carries its session's record
(``recall``: arm, injected ids, followed ids), so once the log is full each rotation drops entries whose
sessions ``store.api.appending._keep_sessions`` folds into ``<project>.sessions.json`` (read, join, one
durable rewrite) before the log is rewritten. Each round appends ``N`` single entries (one append each) to
such a project at the cap (500: every append rotates), once as shipped (``on``) and once with
``_keep_sessions`` replaced by a no-op (``off``), the order alternating between rounds. Two cases: the
record file empty at the start (``fresh``) and holding ``store.sessions.KEPT`` records already (``full``,
the steady state of a busy project: the largest file a fold reads and rewrites). The store runs without
rotation slack, so that every append rotates and folds (the worst case); with the shipped
``Settings.rotation_slack`` (50) a log at the cap rotates once per 51 appends, so a fold's cost is spread
over them (``fold_ms_per_append_at_shipped_slack``). Reported: the median over rounds of the mean wall and
CPU ms per append, and of the time spent in ``_keep_sessions`` itself (one fold per append here).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import run_main
from bench.store_bench import OWNER, PROJECT, make_entries
from fixmem.settings import Settings
from store import FixEntry, FixStore
from store.api import appending
from store.sessions import KEPT, SessionRecord

ROUNDS = 5
APPENDS = 40
CAP = 500
SLACK = Settings.model_fields["rotation_slack"].default


def with_session(entry: FixEntry, n: int) -> FixEntry:
    """``entry`` as a hook-driven turn of session ``s<n>``: its record, three fixes shown, one followed."""
    arm = "holdback" if n % 10 == 0 else "memory"
    shown = [{"id": f"fix-{(n * 3 + k) % 4096:016x}"} for k in range(3)]
    recall = {
        "arm": arm,
        "injected": shown if arm == "memory" else [],
        "shadow": [] if arm == "memory" else shown,
    }
    recall["followed"] = [shown[0]["id"]]
    return entry.model_copy(update={"session_id": f"s{n}", "recall": recall})


def _project(root: Path, *, full: bool) -> FixStore:
    store = FixStore(root, cap=CAP)
    entries = [with_session(e, n) for n, e in enumerate(make_entries(CAP))]
    for i in range(0, CAP, 100):
        store.append(OWNER, PROJECT, entries[i : i + 100])
    if full:
        older = [
            SessionRecord(PROJECT, f"old{n}", "memory", float(n), (f"fix-{n:016x}",), (), (f"fix-{n:016x}",))
            for n in range(KEPT)
        ]
        assert store.record_sessions(OWNER, PROJECT, older) == KEPT
    return store


def _one(appends: int, *, fold: bool, full: bool, seed: int) -> tuple[float, float, float]:
    """Mean wall and CPU seconds of ``appends`` one-entry appends at the cap, and the mean wall seconds
    spent in ``_keep_sessions`` (0 for the ``off`` side)."""
    spent = [0.0]
    shipped = appending._keep_sessions

    def timed(*args: Any) -> None:
        t = time.perf_counter()
        shipped(*args)
        spent[0] += time.perf_counter() - t

    with tempfile.TemporaryDirectory() as tmp:
        store = _project(Path(tmp), full=full)
        start = 20_000 + seed * appends
        entries = [
            with_session(e, start + i) for i, e in enumerate(make_entries(appends, seed=seed, start=start))
        ]
        appending._keep_sessions = timed if fold else (lambda *_: None)  # type: ignore[assignment]
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            for entry in entries:
                store.append(OWNER, PROJECT, [entry])
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            appending._keep_sessions = shipped
        if fold:
            assert len(store.sessions(OWNER, PROJECT)) >= appends  # the folds happened
        return wall / appends, cpu / appends, spent[0] / appends


def run(rounds: int, *, appends: int = APPENDS) -> dict[str, Any]:
    samples: dict[str, dict[str, list[list[float]]]] = {
        case: {side: [[], [], []] for side in ("on", "off")} for case in ("fresh", "full")
    }
    for r in range(rounds):
        for case in ("fresh", "full"):
            for side in ("on", "off") if r % 2 == 0 else ("off", "on"):
                wall, cpu, spent = _one(appends, fold=side == "on", full=case == "full", seed=r)
                for i, value in enumerate((wall, cpu, spent)):
                    samples[case][side][i].append(round(value * 1000, 4))

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 3)

    rows: dict[str, Any] = {}
    for case, sides in samples.items():
        row: dict[str, Any] = {
            side: {"wall_ms_per_append": median(s[0]), "cpu_ms_per_append": median(s[1])}
            for side, s in sides.items()
        }
        row["cpu_ms_added"] = round(row["on"]["cpu_ms_per_append"] - row["off"]["cpu_ms_per_append"], 3)
        row["wall_ms_added"] = round(row["on"]["wall_ms_per_append"] - row["off"]["wall_ms_per_append"], 3)
        row["keep_sessions_ms_per_fold"] = median(sides["on"][2])
        row["fold_ms_per_append_at_shipped_slack"] = round(median(sides["on"][2]) / (SLACK + 1), 3)
        rows[case] = row
    return {
        "method": "interleaved rounds (order alternating), medians over rounds of the mean per append",
        "cap": CAP,
        "shipped_rotation_slack": SLACK,
        "kept_records_when_full": KEPT,
        "appends_per_round": appends,
        "samples_ms": {
            case: {side: {"wall": s[0], "cpu": s[1], "keep_sessions": s[2]} for side, s in sides.items()}
            for case, sides in samples.items()
        },
        "summary": rows,
    }


main = run_main("sessions_fold_ab", __doc__, run, runs=ROUNDS, what="side", appends=APPENDS)
"""Run the A/B, print its summary, write ``bench/results/sessions_fold_ab.json``."""

if __name__ == "__main__":
    main()
