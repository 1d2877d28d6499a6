"""Fast regression tests, one per failure the reliability runs found (each fails on the code before its fix).

The scenario that found each one lives in its own module; these pin the root cause in a second or less.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import redis
from rq import Queue
from rq.executions import Execution
from rq.serializers import JSONSerializer

from ingest import keys
from store import FixStore
from store.fsio import temp_name
from store.paths import project_files
from tests.store.factories import OWNER, PROJECT, make_entry
from workers.reaper import reap_queue
from workers.worker import FixmemQueue, WorkerOptions, build_worker, run_worker


def test_a_rewrite_killed_before_its_rename_leaves_no_temp_file_after_the_next_write(data_dir: Path) -> None:
    """Found by test_rotation_kill: a worker SIGKILLed mid-rotation left a full copy of the log behind."""
    store = FixStore(data_dir, cap=3)
    store.append(OWNER, PROJECT, [make_entry(n) for n in range(3)])
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    stale = [temp_name(files.log), temp_name(files.index)]  # what a killed rewrite leaves
    for path in stale:
        path.write_bytes(files.log.read_bytes())
    unrelated = files.directory / ".notes.tmp"
    unrelated.write_text("not ours")

    store.append(OWNER, PROJECT, [make_entry(3)])  # rotates (cap 3) under the lock

    assert not any(p.exists() for p in stale)
    assert unrelated.exists()
    assert len(store.read(OWNER, PROJECT).entries) == 3


def _die_after_registering_the_execution(client: redis.Redis, queue: Queue) -> Execution:
    """Dequeue the next job and register its execution as a worker does — then 'die' before starting it."""
    worker = build_worker(client, WorkerOptions(queues=(queue.name,)))
    dequeued = FixmemQueue.dequeue_any([queue], None, connection=client, serializer=JSONSerializer)
    assert dequeued is not None
    return worker.prepare_execution(dequeued[0])  # prepare_job_execution (status STARTED) never runs


@pytest.mark.xfail(
    strict=True,
    reason="workers/reaper.py (pipeline, not DONE yet): a worker killed between prepare_execution and "
    "prepare_job_execution orphans its job — the stuck check drops the intermediate entry (the job 'is "
    "running'), then the abandoned check drops the lapsed execution without requeueing (status is QUEUED, "
    "not STARTED), and without deleting it (the next run would fail in RQ's success bookkeeping)",
)
def test_a_worker_killed_before_starting_its_registered_job_loses_nothing(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Found by test_crashes (chaos, 20 kills): 4 of 10,000 events never got an outcome, their batch
    hashes left in Redis with no job in any queue or registry."""
    queue = FixmemQueue(keys.DEFAULT_LIVE_QUEUE, connection=redis_client, serializer=JSONSerializer)
    job = queue.enqueue("tests.workers.helpers.record", redis_url, "ran", "once", result_ttl=0)
    execution = _die_after_registering_the_execution(redis_client, queue)
    now = time.time()
    reap_queue(queue, now=now, stuck_seconds=10, max_abandons=3)  # a reaper runs while the lease is alive
    redis_client.zadd(queue.started_job_registry.key, {execution.composite_key: now - 1})  # the lease lapses
    redis_client.delete(execution.key)
    for later in (0, 11, 30):
        reap_queue(queue, now=now + later, stuck_seconds=10, max_abandons=3)
    assert queue.job_ids == [job.id], "the job is in no queue: its batch would wait forever"
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        run_worker(redis_client, WorkerOptions(queues=(queue.name,)), burst=True)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert redis_client.lrange("ran", 0, -1) == [b"once"]
    assert queue.failed_job_registry.count == 0  # RQ did not trip on a dead execution after success
