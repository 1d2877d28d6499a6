"""``python -m bench``: every benchmark in one command, results in ``bench/results/``.

1. throughput — publish N = 50,000 realistic events -> entries on disk with 2 workers, then with 1 (its N
                 sized from the 2-worker rate to ~30 s of work), vs one RQ job per event (a 150-event sample)
2. latency    — 1,000 events/s offered for 60 s: publish -> entry p50/p99, alone and during a backfill
                 (probes not on disk 10 s after the window count as never seen)
3. recall     — p50/p99 at 50 and 500 entries, cold, warm, and through the HTTP API
4. extraction — events/s per core (CPU time) on realistic turns
5. backfill   — real trajectories/s over the shared agent-log corpus, end to end
6. memory     — peak RSS of the consumer and the workers during 1 (in ``throughput.json``)
7. scaling    — events/s with 1, 2, 4 workers x at most 1, 10, 100, 500 events per job (+ PNG); 2,000
                 events a cell, 300 and 1,000 in the 1- and 10-event-per-job cells (~60 and ~200-400 events/s)
8. startup    — ``fixmem --version``, ``--help``, ``recall``, ``status`` as fresh processes, 20 runs each
                 (``bench.startup``)
9. hooks      — the installed Claude Code hook, one process per event: p50/p99 wall and CPU per event
                 kind at 500 entries, local (recall daemon) and through the HTTP API; the
                 ``fixmem.hooks.harness`` overhead per turn (``bench.hooks``)
10. ui         — the web UI's pages at 200 projects of 500 entries (one owner): server time cold (the first
                 request after a start) and p50/p95 over 30 warm requests, and the projects page on logs
                 with no summary files yet (``bench.ui``)

Sized so the whole suite takes under 10 minutes here (every size is in each result's ``parameters``; the
estimate per benchmark is in docs/performance.md).

Each writes ``bench/results/<name>.json`` (machine, versions, parameters, raw samples, summary; 4 and 5
as ``extraction_per_core.json`` and ``backfill_end_to_end.json``, next to their owners' files); then
``bench/results/SUMMARY.md`` (the Markdown table) is written and embedded in docs/benchmarks.md between the
``<!-- bench:begin -->`` / ``<!-- bench:end -->`` markers. ``--quick`` runs every benchmark on tiny inputs
(a smoke test: its results go to a temporary directory unless ``--results`` names one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import report
from bench.common import RESULTS, load_average, machine, versions, write_result
from bench.corpus import DEFAULT_SHAPE, SHARED_CORPUS, measure
from bench.events import PROJECTS, SEED, EventStats, make_events

TABLE_PAGE = RESULTS.parent.parent / "docs" / "benchmarks.md"  # the page the results table is embedded in
NAMES = ("throughput", "latency", "recall", "extraction", "backfill", "scaling", "startup", "hooks", "ui")
# The file each writes in bench/results/: extraction.json and backfill.json belong to the owners' own
# benchmarks (bench.extraction_bench, bench.backfill_bench), which the suite reuses but does not overwrite.
RESULT_FILES = {
    **{n: n for n in NAMES},
    "extraction": "extraction_per_core",
    "backfill": "backfill_end_to_end",
}


@dataclass(frozen=True)
class Params:
    """The suite's sizes (``full`` is what the committed results use)."""

    events: int = 50_000  # benchmark 1's main configuration (2 workers)
    one_worker_seconds: float = 30.0  # the 1-worker run: sized to about this long from the 2-worker rate
    one_worker_min_events: int = 5_000
    baseline_events: int = 150  # one job per event runs at ~15-30/s: a sample
    latency_rate: float = 1_000.0
    latency_seconds: float = 60.0
    latency_drain_seconds: float = 10.0  # probes not on disk this long after the window: never_seen
    scaling_events: int = 2_000
    scaling_projects: int = 4  # few enough that a job can hold 500 events, enough for 4 workers in parallel
    scaling_events_by_batch: tuple[tuple[int, int], ...] = ((1, 300), (10, 1_000))  # small-batch cells' N
    cold_runs: int = 60
    warm_runs: int = 3_000
    http_runs: int = 1_000
    extraction_events: int = 500
    extraction_rounds: int = 3
    backfill_copies: int = 10
    startup_runs: int = 20
    hook_runs: int = 50
    ui_runs: int = 30
    ui_projects: int = 200
    ui_entries: int = 500

    @classmethod
    def quick(cls) -> Params:
        return cls(
            events=400,
            one_worker_seconds=1.0,
            one_worker_min_events=100,
            baseline_events=40,
            latency_rate=100.0,
            latency_seconds=3.0,
            latency_drain_seconds=3.0,
            scaling_events=60,
            scaling_projects=2,
            scaling_events_by_batch=((1, 20), (10, 40)),
            cold_runs=5,
            warm_runs=50,
            http_runs=30,
            extraction_events=20,
            extraction_rounds=1,
            backfill_copies=1,
            startup_runs=2,
            hook_runs=3,
            ui_runs=2,
            ui_projects=3,
            ui_entries=20,
        )


# -- the benchmarks that are not in their own module ------------------------------------------------------


def extraction(params: Params, events: list[bytes]) -> dict[str, Any]:
    """Benchmark 4: extraction events/s per core (CPU time), the issue's turn and the corpus-shaped mix."""
    from bench import extraction_bench  # noqa: PLC0415
    from ingest.schema import parse_event  # noqa: PLC0415
    from workers.extraction import extract  # noqa: PLC0415

    fixed = extraction_bench.run(params.extraction_events, params.extraction_rounds)
    parsed = [parse_event(raw) for raw in events[: max(params.extraction_events * 4, 50)]]
    cpu: list[float] = []
    for _ in range(params.extraction_rounds):
        started = time.process_time()
        for event in parsed:
            extract(event)
        cpu.append(time.process_time() - started)
    mix = {
        "events": len(parsed),
        "events_per_s": round(len(parsed) / statistics.median(cpu), 1),
        "us_per_event": round(statistics.median(cpu) / len(parsed) * 1e6, 1),
        "samples_cpu_seconds": [round(c, 4) for c in cpu],
        "mean_tool_events": round(sum(len(e.tool_events) for e in parsed) / len(parsed), 1),
        "mean_output_kb": round(
            sum(len(t.output) for e in parsed for t in e.tool_events) / len(parsed) / 1024, 1
        ),
    }
    issue_turn = fixed["realistic_turn"]
    return {
        "issue_turn": fixed,
        "generator_mix": mix,
        "summary": {
            "issue_turn_20_events_50kb_events_per_s": issue_turn["events_per_s"],
            "issue_turn_us_per_event": issue_turn["us_per_event"],
            "generator_mix_events_per_s": mix["events_per_s"],
            "generator_mix_us_per_event": mix["us_per_event"],
            "goal_events_per_s_per_core": 5000,
            "goal_met": issue_turn["events_per_s"] >= 5000,
        },
    }


def backfill(params: Params) -> dict[str, Any]:
    """Benchmark 5: ``bench.backfill_bench`` (the backfill engineer's) over the shared corpus."""
    from bench import backfill_bench  # noqa: PLC0415

    corpus = SHARED_CORPUS if SHARED_CORPUS.is_dir() else backfill_bench.FIXTURES
    options = backfill_bench.Options(
        corpus,
        copies=params.backfill_copies,
        layout="projects",
        workers=2,
        baseline_seconds=2.0 if params.backfill_copies < 5 else 5.0,
    )
    figures = backfill_bench.run(options)
    e2e = figures["end_to_end"]
    live = figures.get("live_latency", {}).get("during_backfill", {})
    return {
        "figures": figures,
        "summary": {
            "layout": options.layout,
            "trajectories": figures["trajectories"],
            "trajectories_per_s": e2e["trajectories_per_s"],
            "events_per_s": e2e["events_per_s"],
            "mb_per_s": e2e["mb_per_s"],
            "goal_trajectories_per_s": backfill_bench.GOAL_TRAJECTORIES_PER_S,
            "goal_met": e2e["trajectories_per_s"] >= backfill_bench.GOAL_TRAJECTORIES_PER_S,
            "live_p99_ms_during_backfill": live.get("p99_ms"),
            "live_rate_per_s": options.live_rate,
        },
    }


# -- running ---------------------------------------------------------------------------------------------


def run(names: list[str], params: Params, results: Path, *, readme: Path | None) -> dict[str, dict[str, Any]]:
    """Run the named benchmarks in order; write each result, the summary table and the plot."""
    from bench import hooks, latency, recall_http, startup, throughput, ui  # noqa: PLC0415

    suite_started = time.monotonic()
    need_events = params.events if {"throughput", "latency", "extraction"} & set(names) else 0
    print(f"generating {need_events:,} realistic events …", file=sys.stderr, flush=True)
    started = time.monotonic()
    events = make_events(need_events) if need_events else []
    generation_s = time.monotonic() - started
    stats = EventStats.of(events) if events else None
    shape = measure(SHARED_CORPUS) if SHARED_CORPUS.is_dir() else DEFAULT_SHAPE
    common = {
        "versions": versions(),
        "generator": {
            "seed": SEED,
            "projects": PROJECTS,
            "corpus_shape": shape.to_json(),
            "events": asdict(stats) if stats else None,
            "generation_seconds": round(generation_s, 1),
        },
    }
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "throughput": lambda: throughput.throughput(
            events,
            params.baseline_events,
            one_worker_seconds=params.one_worker_seconds,
            one_worker_min_events=params.one_worker_min_events,
        ),
        "latency": lambda: latency.latency(
            events,
            rate=params.latency_rate,
            seconds=params.latency_seconds,
            drain_seconds=params.latency_drain_seconds,
        ),
        "recall": lambda: recall_http.recall(params.cold_runs, params.warm_runs, params.http_runs),
        "extraction": lambda: extraction(params, events),
        "backfill": lambda: backfill(params),
        "scaling": lambda: throughput.scaling(
            make_events(params.scaling_events, projects=params.scaling_projects),
            events_by_batch=dict(params.scaling_events_by_batch),
        ),
        "startup": lambda: startup.run(params.startup_runs),
        "hooks": lambda: hooks.run(params.hook_runs),
        "ui": lambda: ui.run(params.ui_runs, projects=params.ui_projects, entries=params.ui_entries),
    }
    done: dict[str, dict[str, Any]] = {}
    failures: list[str] = []
    for name in names:
        print(f"[{time.monotonic() - suite_started:6.0f}s] {name} …", file=sys.stderr, flush=True)
        load = load_average()
        started = time.monotonic()
        try:
            body = steps[name]()
        except Exception as exc:  # one broken benchmark must not cost the others' figures
            traceback.print_exc()
            failures.append(name)
            body = {"error": f"{type(exc).__name__}: {exc}", "summary": None}
        result = {
            "benchmark": name,
            "machine": machine(load),
            **common,
            "parameters": asdict(params),
            "seconds": round(time.monotonic() - started, 1),
            **body,
        }
        write_result(RESULT_FILES[name], result, directory=results)
        done[name] = result
        if name == "scaling" and body.get("summary"):
            throughput.plot_scaling(body, results / "scaling.png")
    total = time.monotonic() - suite_started
    print(f"[{total:6.0f}s] done", file=sys.stderr, flush=True)
    table = report.markdown(results, suite_seconds=total)
    (results / "SUMMARY.md").write_text(table)
    if readme is not None:
        report.embed(readme, table)
    return done


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and run the suite; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"benchmarks to run: {', '.join(NAMES)} (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny inputs: a smoke test of every benchmark")
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="where results go (default: bench/results; --quick: a temporary directory)",
    )
    parser.add_argument(
        "--no-readme", action="store_true", help="do not update the table in docs/benchmarks.md"
    )
    parser.add_argument("--events", type=int, default=None, help="events of benchmark 1 (default 50,000)")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: rewrite SUMMARY.md and docs/benchmarks.md's table from the results JSON",
    )
    args = parser.parse_args(argv)
    if args.report_only:
        results = args.results or RESULTS
        table = report.markdown(results)
        (results / "SUMMARY.md").write_text(table)
        if not args.no_readme:
            report.embed(TABLE_PAGE, table)
        return 0
    unknown = sorted(set(args.names) - set(NAMES))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)} (choose from {', '.join(NAMES)})")
    names = [n for n in NAMES if n in args.names] if args.names else list(NAMES)
    params = Params.quick() if args.quick else Params()
    if args.events is not None:
        params = replace(params, events=args.events)
    if args.results is None and args.quick:
        with tempfile.TemporaryDirectory(prefix="fixmem-bench-quick-") as tmp:
            done = run(names, params, Path(tmp), readme=None)
        return 1 if any(r.get("error") for r in done.values()) else 0
    readme = None if args.no_readme or args.quick else TABLE_PAGE
    done = run(names, params, args.results or RESULTS, readme=readme)
    return 1 if any(r.get("error") for r in done.values()) else 0
