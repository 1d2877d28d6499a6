"""Benchmark 3: recall latency in-process (cold and warm, ``bench.store_bench``) and through the HTTP API.

HTTP: ``fixmem serve`` runs as its own process (uvicorn, the shipped app) over a data directory holding
one project of ``n`` entries; one keep-alive client sends ``GET /api/fix-memory`` with a bearer token, the
same query mix as in-process (related queries with and without files/errors, unrelated ones that must
abstain). Latency = request sent -> response read, after a warm-up.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import serving, summary_ms
from bench.store_bench import OWNER, PROJECT, bench_recall, make_queries, populated

TOKEN = "bench-token-0123456789abcdef"
GOAL_WARM_P50_MS = 1.0
GOAL_WARM_P99_MS = 5.0


def http_recall(n: int, runs: int) -> dict[str, Any]:
    """Warm recall latency through ``fixmem serve`` at ``n`` entries (milliseconds)."""
    with tempfile.TemporaryDirectory(prefix="fixmem-http-") as tmp:
        populated(Path(tmp), n)
        with (
            serving(Path(tmp), f"{TOKEN}:{OWNER}") as base,
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10) as client,
        ):
            queries = make_queries(runs)
            params = [{"project_id": PROJECT, "q": q["query"]} for q in queries]
            for p in params[:50]:
                client.get("/api/fix-memory", params=p).raise_for_status()
            seconds: list[float] = []
            for p in params:
                started = time.perf_counter()
                client.get("/api/fix-memory", params=p).raise_for_status()
                seconds.append(time.perf_counter() - started)
    return {"entries": n, "warm": summary_ms(seconds), "samples_ms": [round(s * 1000, 3) for s in seconds]}


def recall(cold_runs: int, warm_runs: int, http_runs: int) -> dict[str, Any]:
    """In-process cold/warm and HTTP warm recall at 50 and 500 entries."""
    in_process = [bench_recall(n, cold_runs, warm_runs) for n in (50, 500)]
    http = [http_recall(n, http_runs) for n in (50, 500)]
    warm500 = in_process[1]["warm"]
    rows = [
        {
            "entries": p["entries"],
            "cold_p50_ms": p["cold"]["p50_ms"],
            "cold_p99_ms": p["cold"]["p99_ms"],
            "warm_p50_ms": p["warm"]["p50_ms"],
            "warm_p99_ms": p["warm"]["p99_ms"],
            "warm_cpu_p50_ms": p["warm"]["cpu_p50_ms"],
            "warm_cpu_p99_ms": p["warm"]["cpu_p99_ms"],
            "http_p50_ms": h["warm"]["p50_ms"],
            "http_p99_ms": h["warm"]["p99_ms"],
        }
        for p, h in zip(in_process, http, strict=True)
    ]
    return {
        "in_process": in_process,
        "http": http,
        "summary": {
            "rows": rows,
            "goal": {"warm_p50_ms": GOAL_WARM_P50_MS, "warm_p99_ms": GOAL_WARM_P99_MS, "at_entries": 500},
            "goal_met": warm500["p50_ms"] <= GOAL_WARM_P50_MS and warm500["p99_ms"] <= GOAL_WARM_P99_MS,
            "goal_met_cpu_time": warm500["cpu_p50_ms"] <= GOAL_WARM_P50_MS
            and warm500["cpu_p99_ms"] <= GOAL_WARM_P99_MS,
        },
    }
