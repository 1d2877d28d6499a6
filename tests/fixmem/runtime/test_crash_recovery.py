"""SIGKILL a real worker mid-job and a real consumer mid-batch: the others finish their work in < 60 s.

Default timings (lease 15 s, reap every 5 s, claim after 20 s idle): these tests prove the promise as
shipped, not with shortened timeouts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from fixmem import wiring
from fixmem.settings import Settings
from ingest import keys
from ingest.consumer import Consumer
from ingest.publish import publish_many
from tests.configs import fix_store
from tests.ingest.turns import turn
from tests.polling import wait_for
from workers.counters import read_counters
from workers.locks import RedisLeaseLock

ROOT = Path(__file__).resolve().parents[3]
PROMISE_SECONDS = 60.0
PROJECT = "github.com/acme/widgets"


@pytest.fixture
def settings(redis_url: str, data_dir: Path) -> Settings:
    return Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir)})


def _spawn(settings: Settings, *args: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "FIXMEM_REDIS_URL": str(settings.redis_url),
        "FIXMEM_DATA_DIR": str(settings.data_dir),
    }
    return subprocess.Popen([sys.executable, "-m", "fixmem", *args], cwd=ROOT, env=env)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_worker_killed_mid_job_has_its_batch_finished_by_another(
    settings: Settings, redis_client: redis.Redis
) -> None:
    publish_many(redis_client, [turn(i) for i in range(10)])
    Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
    wip = "rq:wip:" + settings.live_queue
    release = threading.Event()
    held = threading.Event()

    def hold_the_project() -> None:  # keeps the job inside process_batch, waiting for the project lock
        client = redis.Redis.from_url(str(settings.redis_url))
        with RedisLeaseLock(client, keys.project_lock("alice", PROJECT), lease=10, wait=5):
            held.set()
            release.wait(120)

    holder = threading.Thread(target=hold_the_project)
    holder.start()
    held.wait(10)
    doomed = _spawn(settings, "worker")
    try:
        wait_for(lambda: redis_client.zcard(wip) == 1, 120, "the worker started the job")
        _kill(doomed)
        killed_at = time.monotonic()
    finally:
        release.set()
        holder.join()
        if doomed.poll() is None:
            _kill(doomed)
    rescuer = _spawn(settings, "worker")
    try:
        wait_for(
            lambda: len(fix_store(settings.data_dir).read("alice", PROJECT).entries) == 10, 120, "entries"
        )
        took = time.monotonic() - killed_at
        # the entries reach disk before the job's counters: wait for the batch to be done as well
        wait_for(lambda: redis_client.keys("fixmem:batch:*") == [], 60, "the batch to be done")
    finally:
        rescuer.send_signal(signal.SIGTERM)
        rescuer.wait(60)
    print(f"\nworker SIGKILLed mid-job: batch finished by another worker {took:.1f}s after the kill")
    assert took < PROMISE_SECONDS
    entries = fix_store(settings.data_dir).read("alice", PROJECT).entries
    assert len({e.id for e in entries}) == 10
    fleet = read_counters(redis_client)
    assert fleet.events["recorded"] == 10
    assert fleet.pipeline["jobs_abandoned"] == 1


def test_a_consumer_killed_mid_batch_has_its_entries_taken_over(
    settings: Settings, redis_client: redis.Redis
) -> None:
    caught_pending = 0
    published = 0
    for _attempt in range(5):  # kill it until the kill lands between a read and its commit
        published += len(publish_many(redis_client, [turn(published + i) for i in range(3000)]))
        before = _enqueued(redis_client)
        doomed = _spawn(settings, "ingest", "--name", "doomed")
        wait_for(
            lambda before=before: _pending_of(redis_client, "doomed") > 0 or _enqueued(redis_client) > before,
            120,
            "reading",
        )
        _kill(doomed)
        caught_pending = _pending_of(redis_client, "doomed")
        if caught_pending:
            break
    assert caught_pending > 0, "never caught the consumer mid-batch"
    killed_at = time.monotonic()
    survivor = Consumer(redis_client, wiring.consumer_config(settings, name="survivor"))
    stop = threading.Event()
    thread = threading.Thread(target=survivor.run, kwargs={"stop": stop})
    thread.start()
    try:
        took = wait_for(lambda: _pending_of(redis_client, "doomed") == 0, 120, "reclaimed")
        wait_for(lambda: _enqueued(redis_client) >= published, 120, "all enqueued")
    finally:
        stop.set()
        thread.join()
    print(
        f"\nconsumer SIGKILLed with {caught_pending} entries in flight: reclaimed {took:.1f}s after the kill"
    )
    assert time.monotonic() - killed_at < PROMISE_SECONDS
    queued_ids = [
        k for job in redis_client.lrange("rq:queue:" + settings.live_queue, 0, -1)
        for k in redis_client.hkeys(keys.batch(job.decode()))
        if k not in (keys.BATCH_STREAM_FIELD, keys.BATCH_RUNS_FIELD)
    ]  # fmt: skip
    assert len(queued_ids) == len(set(queued_ids)) == published  # each turn in exactly one waiting batch


def _pending_of(client: redis.Redis, consumer: str) -> int:
    try:
        for c in client.xinfo_consumers(keys.DEFAULT_STREAM, keys.DEFAULT_GROUP):
            if c["name"] == consumer.encode():
                return int(c["pending"])
    except redis.exceptions.ResponseError:
        return 0
    return 0


def _enqueued(client: redis.Redis) -> int:
    return int(client.hget(keys.METRICS_PIPELINE, "events_enqueued") or 0)
