"""The baseline of benchmark 1: the obvious design, one plain RQ job per event.

Each event is enqueued as its own job (``Queue.enqueue_many``, JSON serializer); the job parses it,
extracts it and appends its one entry to the same ``FixStore`` the pipeline uses, then counts itself done.
Workers are RQ's default ``Worker`` (a fork per job) or ``SimpleWorker`` (no fork), started as
``python -m bench.baseline KIND URL DATA_DIR``.

(The job's store is made on first use from ``BENCH_BASELINE_DATA_DIR`` in the job's own module: a store
set up in ``__main__`` would not be the one the job, imported by name, sees.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis
from rq import Queue, SimpleWorker, Worker
from rq.serializers import JSONSerializer

from bench.common import ROOT, default_store
from ingest.schema import parse_event
from store import FixStore
from workers.extraction import extract

QUEUE = "bench-baseline"
JOB = "bench.baseline.job"
DONE_KEY = "bench:baseline:done"
DATA_DIR_ENV = "BENCH_BASELINE_DATA_DIR"

_store: FixStore | None = None
_client: redis.Redis | None = None


def job(raw: str, url: str) -> None:
    """One event: parse, extract, append its entry; then count it done."""
    global _store, _client  # noqa: PLW0603 - one store and client per worker process (and per forked child)
    if _store is None:
        _store = default_store(os.environ[DATA_DIR_ENV])
    if _client is None:
        _client = redis.Redis.from_url(url)
    event = parse_event(raw.encode())
    entry = extract(event).entry
    if entry is not None:
        _store.append(event.owner, event.project_key, [entry])
    _client.incr(DONE_KEY)


def _worker(kind: str, url: str) -> None:
    client = redis.Redis.from_url(url)
    queue = Queue(QUEUE, connection=client, serializer=JSONSerializer)
    cls = Worker if kind == "fork" else SimpleWorker
    cls([queue], connection=client, serializer=JSONSerializer).work(logging_level="WARNING")


def run(url: str, data_dir: Path, events: list[bytes], workers: int, kind: str) -> dict[str, Any]:
    """Enqueue one job per event for ``workers`` workers of ``kind``; time enqueue -> last job done."""
    client = redis.Redis.from_url(url)
    client.flushall()
    env = {**os.environ, DATA_DIR_ENV: str(data_dir)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.baseline", kind, url],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    try:
        deadline = time.monotonic() + 120
        while client.scard("rq:workers") < workers:
            if time.monotonic() > deadline:
                raise TimeoutError("baseline workers did not register")
            time.sleep(0.05)
        queue = Queue(QUEUE, connection=client, serializer=JSONSerializer)
        started = time.perf_counter()
        with client.pipeline() as pipe:
            queue.enqueue_many(
                [
                    Queue.prepare_data(JOB, args=(raw.decode(), url), result_ttl=0, failure_ttl=3600)
                    for raw in events
                ],
                pipeline=pipe,
            )
            pipe.execute()
        failed = queue.failed_job_registry
        deadline = time.monotonic() + 3600
        while int(client.get(DONE_KEY) or 0) + failed.count < len(events):
            if time.monotonic() > deadline:
                raise TimeoutError("baseline did not finish")
            time.sleep(0.02)
        took = time.perf_counter() - started
        failures = failed.count
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if failures:
        raise RuntimeError(f"{failures} baseline jobs failed (see RQ's failed registry)")
    return {
        "worker": "Worker (fork per job)" if kind == "fork" else "SimpleWorker",
        "events": len(events),
        "workers": workers,
        "seconds": round(took, 3),
        "events_per_s": round(len(events) / took, 1),
    }


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2])
