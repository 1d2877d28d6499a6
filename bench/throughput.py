"""Benchmarks 1, 6 and 7: pipeline throughput against one RQ job per event, peak memory, and scaling.

The pipeline runs are ``bench.pipeline_bench.run_pipeline``'s (the pipeline engineer's): it starts an
idle consumer and W workers (``python -m fixmem.child``) on a private embedded Redis, XADDs the events in
pipelined chunks of 1,000 and stops the clock when the fleet counters account for every event. The
baseline is ``bench.baseline``: one plain RQ job per event (each job: parse, extract, append its entry to
the same store) for RQ's default fork-per-job ``Worker`` or ``SimpleWorker``. This module feeds them
the realistic events of ``bench.generator`` and watches the child processes' peak RSS
and CPU time (``bench.common.ProcessWatch``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import baseline
from bench.common import ProcessWatch, load_average
from bench.pipeline_bench import run_pipeline
from fixmem.redis_server import EmbeddedRedis

GOAL_EVENTS_PER_S = 10_000
GOAL_VS_BASELINE = 30


@contextlib.contextmanager
def private_redis() -> Iterator[tuple[str, Path]]:
    """A private embedded Redis (AOF everysec, as ``fixmem up`` runs it) and a scratch directory."""
    tmp = Path(tempfile.mkdtemp(prefix="fixmem-suite-"))
    server = EmbeddedRedis(data_dir=tmp / "redis", appendonly=True)
    url = server.start()
    try:
        yield url, tmp
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def env(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set (what the spawned processes inherit) for the block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def pipeline_run(
    url: str, data_dir: Path, events: list[bytes], workers: int, **settings: str
) -> dict[str, Any]:
    """One ``run_pipeline`` with process watching; ``settings``: ``FIXMEM_*`` values for the children."""
    load = load_average()
    with env(**settings), ProcessWatch() as watch:
        result = run_pipeline(url, data_dir, events, workers)
    shutil.rmtree(data_dir, ignore_errors=True)
    roles = watch.by_role()
    result["processes"] = roles
    result["load_average_1m_at_start"] = load
    cpu = sum(r["cpu_seconds"] for r in roles.values())
    result["cpu_ms_per_event_all_processes"] = round(1000 * cpu / max(1, len(events)), 3)
    return result


def baseline_run(url: str, data_dir: Path, events: list[bytes], workers: int, kind: str) -> dict[str, Any]:
    """One ``baseline.run`` (``kind``: ``fork`` or ``simple``) with process watching."""
    load = load_average()
    with ProcessWatch() as watch:
        result = baseline.run(url, data_dir, events, workers, kind)
    shutil.rmtree(data_dir, ignore_errors=True)
    result["processes"] = watch.by_role()
    result["load_average_1m_at_start"] = load
    return result


def throughput(
    events: list[bytes], baseline_events: int, worker_counts: tuple[int, ...] = (1, 2)
) -> dict[str, Any]:
    """Benchmark 1 (and 6, the peak RSS of each role during it): the pipeline vs one job per event."""
    runs: list[dict[str, Any]] = []
    baselines: list[dict[str, Any]] = []
    sample = events[:baseline_events]
    with private_redis() as (url, tmp):
        for workers in worker_counts:
            runs.append(pipeline_run(url, tmp / f"pipeline-{workers}", events, workers))
            baselines.append(baseline_run(url, tmp / f"fork-{workers}", sample, workers, "fork"))
        baselines.append(baseline_run(url, tmp / "simple", sample, max(worker_counts), "simple"))
    rows = []
    for run in runs:
        fork = next(
            b for b in baselines if b["workers"] == run["workers"] and b["worker"].startswith("Worker")
        )
        rows.append(
            {
                "workers": run["workers"],
                "events": run["events"],
                "events_per_s": run["events_per_s"],
                "baseline_fork_events_per_s": fork["events_per_s"],
                "speedup_vs_baseline": round(run["events_per_s"] / fork["events_per_s"], 1),
                "events_per_job": run["events_per_job"],
                "cpu_ms_per_event_all_processes": run["cpu_ms_per_event_all_processes"],
            }
        )
    simple = baselines[-1]
    best = max(rows, key=lambda r: r["events_per_s"])
    memory = {
        f"{run['workers']}_workers": {
            role: info["peak_rss_mb"]
            for role, info in run["processes"].items()
            if role in ("consumer", "worker", "redis")
        }
        for run in runs
    }
    return {
        "runs": runs,
        "baselines": baselines,
        "summary": {
            "rows": rows,
            "baseline_simpleworker_events_per_s": simple["events_per_s"],
            "best_events_per_s": best["events_per_s"],
            "best_speedup_vs_baseline": best["speedup_vs_baseline"],
            "goal_events_per_s_met": best["events_per_s"] >= GOAL_EVENTS_PER_S,
            "goal_vs_baseline_met": best["speedup_vs_baseline"] >= GOAL_VS_BASELINE,
            "peak_rss_mb": memory,
        },
    }


def scaling(
    events: list[bytes],
    worker_counts: tuple[int, ...] = (1, 2, 4),
    batch_sizes: tuple[int, ...] = (1, 10, 100, 500),
) -> dict[str, Any]:
    """Benchmark 7: events/s for each (workers, most events per job); one fresh fleet per cell."""
    cells: list[dict[str, Any]] = []
    with private_redis() as (url, tmp):
        for workers in worker_counts:
            for batch in batch_sizes:
                run = pipeline_run(
                    url, tmp / f"w{workers}-b{batch}", events, workers, FIXMEM_JOB_MAX_EVENTS=str(batch)
                )
                cells.append(
                    {
                        "workers": workers,
                        "job_max_events": batch,
                        "events": run["events"],
                        "events_per_s": run["events_per_s"],
                        "events_per_job": run["events_per_job"],
                        "seconds": run["seconds"],
                        "latency_p99_s_at_most": run["latency_p99_s_at_most"],
                        "cpu_seconds": {r: i["cpu_seconds"] for r, i in run["processes"].items()},
                        "load_average_1m_at_start": run["load_average_1m_at_start"],
                    }
                )
    return {"cells": cells, "summary": {"table": _table(cells, worker_counts, batch_sizes)}}


def _table(
    cells: list[dict[str, Any]], workers: tuple[int, ...], batches: tuple[int, ...]
) -> dict[str, dict[str, float]]:
    return {
        f"{w}_workers": {
            f"batch_{b}": next(
                c["events_per_s"] for c in cells if c["workers"] == w and c["job_max_events"] == b
            )
            for b in batches
        }
        for w in workers
    }


def plot_scaling(result: dict[str, Any], path: Path) -> None:
    """The scaling curve as a PNG: events/s against worker processes, one line per batch size."""
    import matplotlib  # noqa: PLC0415 - the bench extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    cells = result["cells"]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for batch in sorted({c["job_max_events"] for c in cells}):
        row = sorted((c["workers"], c["events_per_s"]) for c in cells if c["job_max_events"] == batch)
        ax.plot([w for w, _ in row], [v for _, v in row], marker="o", label=f"≤ {batch} events/job")
    ax.set_xlabel("worker processes (2 CPU cores)")
    ax.set_ylabel("events/s, publish → entry on disk")
    ax.set_xticks(sorted({c["workers"] for c in cells}))
    ax.set_title("fixmem pipeline scaling (realistic turns)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
