"""Pipeline benchmark: events/s from publish to entries on disk, against a one-job-per-event baseline.

Run: ``python -m bench.pipeline_bench [--events N] [--workers W] [--quick]``. Prints JSON and writes
``bench/results/pipeline.json``. Everything is real: an embedded ``redis-server`` (AOF everysec, as
``fixmem up`` runs it), the consumer and the workers as separate processes
(``python -m fixmem.cli.children``), files with fsync in a temporary data directory.

- *pipeline*: consumer + W workers started and idle; then N turn events are XADDed in pipelined chunks of
  1,000 (raw bytes: the harness side's validation is measured separately); the clock stops when the fleet
  counters account for all N (recorded + skipped + duplicates + dead letters). events/s = N / that time.
  Latency quantiles come from the ``event_to_entry_seconds`` histogram (bucket upper bounds).
- *baseline*: the naive design — one RQ job per event (the event is the job's argument), each job
  parses, extracts and appends its one entry; W workers; RQ's default fork-per-job ``Worker``, and
  ``SimpleWorker`` (no fork) to separate the cost of forking from the cost of not batching.
- *stages*: CPU microseconds per event of each step, in this process: validation (``parse_event``, done by
  the consumer and again by the worker), extraction, the store's append (per entry, in job-sized batches),
  the consumer's cycle (read + validate + plan + one MULTI/EXEC), and RQ's per-job overhead (no-op jobs)
  for ``SimpleWorker`` and the forking ``Worker``.

Events are small, realistic turns (a failing pytest run, an edit, a passing or failing re-run; some
edits without tests; some turns touching no file), over ``--projects`` projects of 5 owners.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import redis
from rq import Queue, SimpleWorker, Worker
from rq.serializers import JSONSerializer

from bench.common import default_store
from fixmem import wiring
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest.consumer import Consumer
from ingest.schema import parse_event
from store import FixStore
from workers.counters import EVENT_TO_ENTRY_BUCKETS, read_counters
from workers.extraction import extract

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "pipeline.json"
GOAL_EVENTS_PER_S = 10_000
GOAL_VS_BASELINE = 30
BASELINE_QUEUE = "bench-baseline"
BASELINE_JOB = "bench.pipeline_bench.baseline_job"

_FAIL = (
    "collected 5 items\n\ntests/test_{m}.py ..F..\n\n"
    "=================================== FAILURES ===================================\n"
    "_____ test_{m}_{k} _____\n\n    def test_{m}_{k}():\n>       assert {m}.parse({k}) == {k}\n"
    "E       {err}\n\ntests/test_{m}.py:{line}: {etype}\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_{m}.py::test_{m}_{k} - {err}\n"
    "========================= 1 failed, 4 passed in 0.0{k}s =========================\n"
)
_PASS = "collected 5 items\n\ntests/test_{m}.py .....\n\n============ 5 passed in 0.03s ============\n"
_ERRORS = [
    ("AssertionError", "AssertionError: assert None == {k}"),
    ("KeyError", "KeyError: 'field_{k}'"),
    ("TypeError", "TypeError: unsupported operand type(s) for +: 'int' and 'str'"),
    ("ValueError", "ValueError: invalid literal for int() with base 10: 'x{k}'"),
]
_MODULES = [
    "parser",
    "router",
    "cache",
    "billing",
    "session",
    "upload",
    "export",
    "mailer",
    "config",
    "search",
]


def make_event(i: int, projects: int) -> bytes:
    """One realistic small turn; the mix: 50% fixed, 20% partial, 20% unverified, 10% no file touched."""
    m = _MODULES[i % len(_MODULES)]
    k = i % 97
    etype, err = _ERRORS[i % len(_ERRORS)]
    fail = _FAIL.format(m=m, k=k, err=err.format(k=k), etype=etype, line=10 + k)
    kind = ("fixed",) * 5 + ("partial",) * 2 + ("unverified",) * 2 + ("none",)
    shape = kind[i % 10]
    tools: list[dict[str, Any]] = []
    if shape in ("fixed", "partial"):
        tools.append({"tool": "bash", "input": {"command": f"pytest -q tests/test_{m}.py"}, "output": fail,
                      "exit_code": 1})  # fmt: skip
    if shape != "none":
        tools.append({"tool": "str_replace_based_edit_tool",
                      "input": {"command": "str_replace", "path": f"src/app/{m}.py",
                                "old_str": f"return data[{k}]", "new_str": f"return data.get({k})"},
                      "output": f"The file src/app/{m}.py has been edited."})  # fmt: skip
    else:
        tools.append({"tool": "bash", "input": {"command": "git status"}, "output": "nothing to commit",
                      "exit_code": 0})  # fmt: skip
    if shape == "fixed":
        tools.append({"tool": "bash", "input": {"command": f"pytest -q tests/test_{m}.py"},
                      "output": _PASS.format(m=m), "exit_code": 0})  # fmt: skip
    if shape == "partial":
        tools.append({"tool": "bash", "input": {"command": f"pytest -q tests/test_{m}.py"}, "output": fail,
                      "exit_code": 1})  # fmt: skip
    event = {
        "v": 1,
        "ts": 1_700_000_000.0 + i,
        "owner": f"team{i % 5}",
        "project_key": f"github.com/acme/service-{i % projects}",
        "workspace": "/srv/app",
        "user_message": f"{m}.parse({k}) fails with {etype} in test_{m}_{k}; make it handle missing keys",
        "tool_events": tools,
        "harness_meta": {"harness": "bench", "turn": i},
    }
    return orjson.dumps(event)


# -- the pipeline ------------------------------------------------------------------------------------


def _spawn(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "fixmem.cli.children", *args], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _handled(client: redis.Redis) -> int:
    return sum(read_counters(client).events.values())


def _quantile(buckets: tuple[tuple[float, int], ...], count: int, q: float) -> float | None:
    """The upper bound of the bucket holding quantile ``q`` (None past the last bound)."""
    for bound, n in buckets:
        if count and n >= q * count:
            return bound
    return None


def run_pipeline(url: str, data_dir: Path, events: list[bytes], workers: int) -> dict[str, Any]:
    """Publish ``events`` into a running consumer + workers and time them to disk."""
    client = redis.Redis.from_url(url)
    client.flushall()
    env = {**os.environ, "FIXMEM_REDIS_URL": url, "FIXMEM_DATA_DIR": str(data_dir)}
    procs = [_spawn(env, "ingest", "--name", "bench-0")] + [_spawn(env, "worker") for _ in range(workers)]
    try:
        _wait(lambda: client.scard("rq:workers") >= workers, 180, "workers registered")
        _wait(lambda: bool(client.exists("fixmem:turns")) and bool(client.xinfo_groups("fixmem:turns")),
              180, "consumer started")  # fmt: skip
        started = time.perf_counter()
        for start in range(0, len(events), 1000):
            with client.pipeline(transaction=False) as pipe:
                for raw in events[start : start + 1000]:
                    pipe.xadd("fixmem:turns", {b"event": raw})
                pipe.execute()
        published = time.perf_counter() - started
        _wait(lambda: _handled(client) >= len(events), 3600, "all events handled")
        took = time.perf_counter() - started
    finally:
        _stop(procs)
    fleet = read_counters(client)
    hist = fleet.event_to_entry
    return {
        "events": len(events),
        "workers": workers,
        "seconds": round(took, 3),
        "events_per_s": round(len(events) / took, 1),
        "publish_events_per_s": round(len(events) / published, 1),
        "events_by_result": dict(fleet.events),
        "jobs": fleet.pipeline.get("jobs_done", 0),
        "events_per_job": round(len(events) / max(1, fleet.pipeline.get("jobs_done", 1)), 1),
        "latency_p50_s_at_most": _quantile(hist.buckets, hist.count, 0.5),
        "latency_p99_s_at_most": _quantile(hist.buckets, hist.count, 0.99),
        "latency_mean_s": round(hist.sum / hist.count, 3) if hist.count else None,
    }


# -- the baseline: one RQ job per event ---------------------------------------------------------------

_baseline_store: FixStore | None = None


def baseline_job(raw: str, counter_url: str) -> None:
    """RQ job of the naive design: one event -> parse, extract, append its entry."""
    if _baseline_store is None:
        raise RuntimeError("baseline_job runs in a baseline worker (python -m bench.pipeline_bench)")
    event = parse_event(raw.encode())
    entry = extract(event).entry
    if entry is not None:
        _baseline_store.append(event.owner, event.project_key, [entry])
    redis.Redis.from_url(counter_url).incr("bench:baseline:done")


def baseline_worker(kind: str, url: str, data_dir: str) -> None:
    """A baseline worker process: ``fork`` (RQ's default Worker) or ``simple`` (SimpleWorker)."""
    # RQ imports the job from `bench.pipeline_bench`, not from this `__main__`: set the store there.
    module = importlib.import_module("bench.pipeline_bench")
    module._baseline_store = default_store(data_dir)  # forked work horses inherit it
    client = redis.Redis.from_url(url)
    cls = Worker if kind == "fork" else SimpleWorker
    queue = Queue(BASELINE_QUEUE, connection=client, serializer=JSONSerializer)
    cls([queue], connection=client, serializer=JSONSerializer).work(logging_level="WARNING")


def run_baseline(url: str, data_dir: Path, events: list[bytes], workers: int, kind: str) -> dict[str, Any]:
    """One job per event on ``workers`` baseline workers; time from enqueue to the last job done."""
    client = redis.Redis.from_url(url)
    client.flushall()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.pipeline_bench", "--baseline-worker", kind, url, str(data_dir)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]  # fmt: skip
    try:
        _wait(lambda: client.scard("rq:workers") >= workers, 180, "baseline workers registered")
        queue = Queue(BASELINE_QUEUE, connection=client, serializer=JSONSerializer)
        started = time.perf_counter()
        with client.pipeline() as pipe:
            queue.enqueue_many(
                [Queue.prepare_data(BASELINE_JOB, args=(raw.decode(), url), result_ttl=0) for raw in events],
                pipeline=pipe,
            )  # fmt: skip
            pipe.execute()
        _wait(lambda: int(client.get("bench:baseline:done") or 0) >= len(events), 3600, "baseline done")
        took = time.perf_counter() - started
    finally:
        _stop(procs)
    return {
        "worker": "Worker (fork per job)" if kind == "fork" else "SimpleWorker",
        "events": len(events),
        "workers": workers,
        "seconds": round(took, 3),
        "events_per_s": round(len(events) / took, 1),
    }


# -- stage costs ---------------------------------------------------------------------------------------


def _cpu_us(fn: Callable[[], object], n: int) -> float:
    started = time.process_time()
    fn()
    return round((time.process_time() - started) / n * 1e6, 1)


def noop(x: int) -> None:
    """A job that does nothing (RQ's own per-job cost)."""


def rq_overhead_ms(url: str, kind: str, jobs: int) -> float:
    """Wall milliseconds per no-op job for one worker of ``kind``, in burst mode."""
    client = redis.Redis.from_url(url)
    client.flushall()
    queue = Queue("bench-noop", connection=client, serializer=JSONSerializer)
    with client.pipeline() as pipe:
        queue.enqueue_many([Queue.prepare_data("bench.pipeline_bench.noop", args=(i,), result_ttl=0)
                            for i in range(jobs)], pipeline=pipe)  # fmt: skip
        pipe.execute()
    cls = Worker if kind == "fork" else SimpleWorker
    started = time.perf_counter()
    cls([queue], connection=client, serializer=JSONSerializer).work(burst=True, logging_level="WARNING")
    return round((time.perf_counter() - started) / jobs * 1000, 2)


def stage_costs(url: str, data_dir: Path, events: list[bytes], projects: int) -> dict[str, Any]:
    """CPU microseconds per event of each stage, measured in this process."""
    parsed = [parse_event(raw) for raw in events]
    entries = [x.entry for x in (extract(p) for p in parsed) if x.entry is not None]
    by_project: dict[tuple[str, str], list[Any]] = {}
    for p, e in zip(parsed, (extract(p).entry for p in parsed), strict=True):
        if e is not None:
            by_project.setdefault((p.owner, p.project_key), []).append(e)
    store = default_store(data_dir / "stages")
    batch = max(1, len(events) // projects // 4)

    def append_all() -> None:
        for (owner, project), items in by_project.items():
            for start in range(0, len(items), batch):
                store.append(owner, project, items[start : start + batch])

    client = redis.Redis.from_url(url)
    client.flushall()
    with client.pipeline(transaction=False) as pipe:
        for raw in events:
            pipe.xadd("fixmem:turns", {b"event": raw})
        pipe.execute()
    config = wiring.consumer_config(Settings.from_env({}), name="stages")
    consumer = Consumer(client, dataclasses.replace(config, read_block_ms=1))
    return {
        "events": len(events),
        "validate_us": _cpu_us(lambda: [parse_event(raw) for raw in events], len(events)),
        "extract_us": _cpu_us(lambda: [extract(p) for p in parsed], len(events)),
        "store_append_us_per_entry": _cpu_us(append_all, len(entries)),
        "store_append_batch": batch,
        "consumer_cycle_us": _cpu_us(lambda: consumer.run(burst=True), len(events)),
        "rq_job_overhead_ms": {
            "SimpleWorker": rq_overhead_ms(url, "simple", 300),
            "Worker (fork)": rq_overhead_ms(url, "fork", 60),
        },
    }


# -- main -----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns (and prints, and writes) the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--projects", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline-events", type=int, default=600)
    parser.add_argument("--quick", action="store_true", help="2,000 events, 150 baseline events")
    parser.add_argument(
        "--baseline-worker", nargs=3, metavar=("KIND", "URL", "DATA_DIR"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.baseline_worker:
        baseline_worker(*args.baseline_worker)
        return {}
    if args.quick:
        args.events, args.baseline_events = 2000, 150
    events = [make_event(i, args.projects) for i in range(args.events)]
    tmp = Path(tempfile.mkdtemp(prefix="fixmem-bench-"))
    load_at_start = os.getloadavg()[0]
    server = EmbeddedRedis(data_dir=tmp / "redis", appendonly=True)
    url = server.start()
    try:
        pipeline = run_pipeline(url, tmp / "pipeline", events, args.workers)
        baseline_fork = run_baseline(url, tmp / "fork", events[: args.baseline_events], args.workers, "fork")
        baseline_simple = run_baseline(
            url, tmp / "simple", events[: args.baseline_events], args.workers, "simple"
        )
        stages = stage_costs(url, tmp, events[:2000], args.projects)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    result = {
        "benchmark": "pipeline",
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_start": round(load_at_start, 2),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "event_bytes_mean": round(sum(map(len, events)) / len(events)),
        "projects": args.projects,
        "goal": {"events_per_s": GOAL_EVENTS_PER_S, "vs_baseline": GOAL_VS_BASELINE},
        "pipeline": pipeline,
        "baseline_one_job_per_event": [baseline_fork, baseline_simple],
        "speedup_vs_fork_baseline": round(pipeline["events_per_s"] / baseline_fork["events_per_s"], 1),
        "speedup_vs_simple_baseline": round(pipeline["events_per_s"] / baseline_simple["events_per_s"], 1),
        "stages_cpu_per_event": stages,
        "latency_buckets_s": list(EVENT_TO_ENTRY_BUCKETS),
    }
    result["goal_reached"] = {
        "events_per_s": pipeline["events_per_s"] >= GOAL_EVENTS_PER_S,
        "vs_baseline": result["speedup_vs_fork_baseline"] >= GOAL_VS_BASELINE,
    }
    print(json.dumps(result, indent=2))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
