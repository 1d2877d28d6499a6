"""Metrics after a real pipeline run: two worker processes, a live /metrics scrape, the store's own stats.

Real Redis (the suite's), the real consumer, two ``fixmem worker`` processes running at the same time,
the API served by uvicorn. Each worker stops after a fixed number of jobs and the two numbers add up to
all the jobs, so each process did exactly its share; the exported counters must be their sum and must
equal what the store itself counts on disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from fixmem import wiring
from fixmem.api.server import build_context
from fixmem.settings import Settings
from ingest import keys
from ingest.consumer import Consumer
from ingest.publish import publish_many
from store import OUTCOMES
from tests.fixmem.api_server import TOKENS, serve
from tests.ingest.turns import Kind, turn

ROOT = Path(__file__).resolve().parents[3]
KINDS: tuple[Kind, ...] = ("fixed", "partial", "unverified", "no_files", "fixed")
EVENTS = 192
FIRST_SHARE = 20  # jobs the first worker process runs before it stops; the second runs the rest


@pytest.fixture
def settings(redis_url: str, data_dir: Path) -> Settings:
    return Settings.from_env(
        {
            "FIXMEM_REDIS_URL": redis_url,
            "FIXMEM_DATA_DIR": str(data_dir),
            "FIXMEM_READ_BLOCK_MS": "20",
            "FIXMEM_API_TOKENS": TOKENS,
            "HOME": "/nonexistent",
        }
    )


def _worker(settings: Settings, name: str, max_jobs: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "FIXMEM_REDIS_URL": str(settings.redis_url),
        "FIXMEM_DATA_DIR": str(settings.data_dir),
    }
    argv = [sys.executable, "-m", "fixmem", "worker", "--name", name, "--max-jobs", str(max_jobs)]
    return subprocess.Popen(argv, cwd=ROOT, env=env)


def _scrape(url: str) -> tuple[str, dict[tuple[str, frozenset[tuple[str, str]]], float]]:
    text = httpx.get(url + "/metrics", timeout=30).text
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    return text, samples


@pytest.fixture
def ran(settings: Settings, redis_client: redis.Redis) -> Iterator[Settings]:
    events = [
        turn(i, owner=("alice", "bob")[i % 2], project=f"repo{i % 6}", kind=KINDS[i % len(KINDS)])
        for i in range(EVENTS)
    ]
    publish_many(redis_client, events)
    publish_many(redis_client, events[:10])  # a harness retried: duplicates
    for bad in (b"{", b"[1]", b'{"v": 2}'):
        redis_client.xadd(settings.stream, {"event": bad})
    config = wiring.consumer_config(settings.with_overrides(job_max_events=4, read_count=1000), name="c1")
    Consumer(redis_client, config).run(burst=True)
    assert redis_client.llen(f"rq:queue:{settings.live_queue}") > FIRST_SHARE + 10  # ~4 events a job
    yield settings


def test_metrics_after_a_real_run_equal_the_stores_stats(ran: Settings, redis_client: redis.Redis) -> None:
    settings = ran
    jobs = redis_client.llen(f"rq:queue:{settings.live_queue}")
    shares = (FIRST_SHARE, jobs - FIRST_SHARE)
    workers = [_worker(settings, f"w{i}", n) for i, n in enumerate(shares)]
    for worker in workers:
        assert worker.wait(timeout=240) == 0

    store = wiring.make_store(settings, None)
    by_outcome = dict.fromkeys(OUTCOMES, 0)
    for owner in ("alice", "bob"):
        for project in store.projects(owner):
            for outcome, n in store.stats(owner, project).by_outcome.items():
                by_outcome[outcome] += n
    total = sum(by_outcome.values())
    skipped = sum(1 for i in range(EVENTS) if KINDS[i % len(KINDS)] == "no_files")
    assert total == EVENTS - skipped

    with serve(build_context(settings)) as api:
        text, samples = _scrape(api.url)

    def value(name: str, **labels: str) -> float:
        return samples[(name, frozenset(labels.items()))]

    assert value("fixmem_redis_up") == 1
    for outcome in OUTCOMES:
        assert value("fixmem_entries_total", outcome=outcome) == by_outcome[outcome]
        assert value("fixmem_outcome_ratio", outcome=outcome) == pytest.approx(by_outcome[outcome] / total)
    assert sum(value("fixmem_outcome_ratio", outcome=o) for o in OUTCOMES) == pytest.approx(1.0)
    assert value("fixmem_events_total", result="recorded") == total
    assert value("fixmem_events_total", result="skipped_no_files") == skipped + 2  # 2 of the 10 retried
    assert value("fixmem_events_total", result="duplicate") == 8
    assert value("fixmem_events_total", result="dead_letter") == 3
    assert value("fixmem_dead_letters_total", reason="invalid_json") == 1
    assert value("fixmem_dead_letters_stored") == redis_client.xlen(settings.dead_stream) == 3
    assert value("fixmem_rotation_dropped_total", outcome="unverified") == 0
    # Each process ran exactly its share; the fleet counter is their sum.
    assert value("fixmem_pipeline_operations_total", operation="jobs_done") == sum(shares) == jobs
    assert value("fixmem_event_to_entry_seconds_count") == total
    assert value("fixmem_event_to_entry_seconds_bucket", le="+Inf") == total
    assert value("fixmem_batch_duration_seconds_count") == jobs
    assert value("fixmem_stream_lag_entries", stream="live") == 0
    assert value("fixmem_stream_pending_entries", stream="live") == 0
    assert value("fixmem_queue_jobs", queue=settings.live_queue, state="queued") == 0
    assert value("fixmem_queue_jobs", queue=settings.live_queue, state="failed") == 0
    assert redis_client.keys(keys.batch("*")) == []
    promtool = shutil.which("promtool")
    if promtool is not None:
        done = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True)
        assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
