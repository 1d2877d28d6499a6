"""The worker: live before backfill, no pickle, leases, the reaper, retries — on a real Redis."""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from rq import Queue, Retry
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from ingest import keys
from ingest.status import worker_liveness
from tests import configs, signals
from tests.polling import wait_for
from workers.reaper import reap_queue
from workers.worker import FixmemQueue, FixmemWorker, WorkerOptions, build_worker, run_worker

LIVE, BACKFILL = keys.DEFAULT_LIVE_QUEUE, keys.DEFAULT_BACKFILL_QUEUE
RECORD = "tests.workers.helpers.record"


@pytest.fixture(autouse=True)
def _keep_signal_handlers() -> Iterator[None]:
    with signals.handlers_kept():
        yield


def q(client: redis.Redis, name: str = LIVE) -> Queue:
    return FixmemQueue(name, connection=client, serializer=JSONSerializer)


def options(**kw: Any) -> WorkerOptions:
    return configs.worker_options(queues=(LIVE, BACKFILL), **kw)


def test_live_jobs_run_before_backfill_jobs(redis_url: str, redis_client: redis.Redis) -> None:
    for i in range(3):
        q(redis_client, BACKFILL).enqueue(RECORD, redis_url, "order", f"backfill-{i}")
    for i in range(2):
        q(redis_client, LIVE).enqueue(RECORD, redis_url, "order", f"live-{i}")
    run_worker(redis_client, options(), burst=True)
    order = [v.decode() for v in redis_client.lrange("order", 0, -1)]
    assert order == ["live-0", "live-1", "backfill-0", "backfill-1", "backfill-2"]
    for name in (LIVE, BACKFILL):  # nothing left half-dequeued
        assert redis_client.llen(q(redis_client, name).intermediate_queue_key) == 0


def test_a_pickled_payload_is_refused_and_the_worker_goes_on(
    redis_url: str, redis_client: redis.Redis
) -> None:
    pickled = Queue(LIVE, connection=redis_client)  # RQ's default serializer: pickle
    bad = pickled.enqueue(RECORD, redis_url, "order", "from-pickle")
    assert redis_client.hget(f"rq:job:{bad.id}", "data") is not None
    q(redis_client).enqueue(RECORD, redis_url, "order", "from-json")
    run_worker(redis_client, options(), burst=True)
    assert redis_client.lrange("order", 0, -1) == [b"from-json"]
    failed = q(redis_client).failed_job_registry
    assert failed.get_job_ids() == [bad.id]
    job = Job.fetch(bad.id, connection=redis_client, serializer=JSONSerializer)
    assert job.get_status() == JobStatus.FAILED
    assert "Deserializ" in (job.latest_result().exc_string or "")  # type: ignore[union-attr]
    assert pickle.loads  # the payload was never unpickled: the JSON serializer cannot


def _start_job_then_abandon(client: redis.Redis, queue: Queue, job: Job) -> FixmemWorker:
    """Dequeue and start ``job`` as a worker would, then let its lease lapse (the worker 'died')."""
    worker = build_worker(client, options())
    dequeued, _ = FixmemQueue.dequeue_any([queue], None, connection=client, serializer=JSONSerializer)  # type: ignore[misc]
    assert dequeued.id == job.id
    execution = worker.prepare_execution(dequeued)
    worker.prepare_job_execution(dequeued)
    client.zadd(queue.started_job_registry.key, {execution.composite_key: time.time() - 1})
    client.delete(execution.key)  # its hash expires with the lease, its registry entries 60 s later
    return worker


def test_an_abandoned_job_is_requeued_at_the_front(redis_url: str, redis_client: redis.Redis) -> None:
    queue = q(redis_client)
    first = queue.enqueue(RECORD, redis_url, "order", "abandoned", result_ttl=0)  # as the consumer does
    queue.enqueue(RECORD, redis_url, "order", "next")
    _start_job_then_abandon(redis_client, queue, first)
    assert reap_queue(queue, now=time.time() - 5, stuck_seconds=10, max_abandons=3).abandoned == 0  # not yet
    result = reap_queue(queue, now=time.time(), stuck_seconds=10, max_abandons=3)
    assert result.abandoned == 1
    assert reap_queue(queue, now=time.time(), stuck_seconds=10, max_abandons=3).abandoned == 0  # taken once
    assert queue.job_ids[0] == first.id
    assert first.get_status(refresh=True) == JobStatus.QUEUED
    assert first.retries_left is None  # abandonment spends no error retry
    run_worker(redis_client, options(), burst=True)
    assert redis_client.lrange("order", 0, -1) == [b"abandoned", b"next"]
    assert queue.failed_job_registry.count == 0  # RQ did not trip on the dead execution when it finished
    assert not redis_client.exists(first.key)  # finished and deleted (result_ttl=0)
    assert redis_client.hget(keys.METRICS_PIPELINE, "jobs_abandoned") == b"1"


def test_a_job_that_keeps_killing_its_worker_ends_in_the_failed_registry(
    redis_url: str, redis_client: redis.Redis
) -> None:
    queue = q(redis_client)
    job = queue.enqueue(RECORD, redis_url, "order", "poison")
    for attempt in range(3):
        _start_job_then_abandon(redis_client, queue, job)
        result = reap_queue(queue, now=time.time(), stuck_seconds=10, max_abandons=2)
        assert (result.abandoned, result.failed) == ((1, 0) if attempt < 2 else (0, 1))
    assert queue.failed_job_registry.get_job_ids() == [job.id]
    assert queue.count == 0


def test_a_worker_that_died_after_registering_but_before_starting_loses_nothing(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Found by the reliability suite's 20-kill run: one batch never got an outcome."""
    queue = q(redis_client)
    job = queue.enqueue(RECORD, redis_url, "order", "registered", result_ttl=0)
    worker = build_worker(redis_client, options())
    dequeued, _ = FixmemQueue.dequeue_any([queue], None, connection=redis_client, serializer=JSONSerializer)  # type: ignore[misc]
    execution = worker.prepare_execution(dequeued)  # then it died: prepare_job_execution never ran
    now = time.time()
    reap_queue(queue, now=now, stuck_seconds=10, max_abandons=3)
    assert redis_client.lrange(queue.intermediate_queue_key, 0, -1) == [job.id.encode()]  # left to the lease
    redis_client.zadd(queue.started_job_registry.key, {execution.composite_key: now - 1})  # lease lapsed
    redis_client.delete(execution.key)
    for later in (0, 11, 30):
        reap_queue(queue, now=now + later, stuck_seconds=10, max_abandons=3)
    assert queue.job_ids == [job.id]  # requeued exactly once
    assert redis_client.llen(queue.intermediate_queue_key) == 0
    run_worker(redis_client, options(), burst=True)
    assert redis_client.lrange("order", 0, -1) == [b"registered"]
    assert queue.failed_job_registry.count == 0


def test_a_job_dequeued_by_a_worker_that_died_at_once_is_requeued(
    redis_url: str, redis_client: redis.Redis
) -> None:
    queue = q(redis_client)
    job = queue.enqueue(RECORD, redis_url, "order", "stuck")
    redis_client.lmove(queue.key, queue.intermediate_queue_key)  # dequeued, then the worker died
    now = time.time()
    assert reap_queue(queue, now=now, stuck_seconds=10, max_abandons=3).stuck == 0  # first sighting
    assert reap_queue(queue, now=now + 11, stuck_seconds=10, max_abandons=3).stuck == 1
    assert queue.job_ids == [job.id]
    assert redis_client.llen(queue.intermediate_queue_key) == 0


def test_errors_are_retried_with_backoff_by_the_reaper(redis_url: str, redis_client: redis.Redis) -> None:
    queue = q(redis_client)
    job = queue.enqueue("tests.workers.helpers.fail", "boom", retry=Retry(max=2, interval=[1, 1]))
    run_worker(redis_client, options(), burst=True)
    assert job.get_status(refresh=True) == JobStatus.SCHEDULED
    assert queue.scheduled_job_registry.get_job_ids() == [job.id]
    assert reap_queue(queue, now=time.time() + 2, stuck_seconds=10, max_abandons=3).retries == 1
    run_worker(redis_client, options(), burst=True)
    reap_queue(queue, now=time.time() + 2, stuck_seconds=10, max_abandons=3)
    run_worker(redis_client, options(), burst=True)
    assert job.get_status(refresh=True) == JobStatus.FAILED
    assert queue.failed_job_registry.get_job_ids() == [job.id]


def test_a_long_job_keeps_its_lease(redis_url: str, redis_client: redis.Redis) -> None:
    queue = q(redis_client)
    job = queue.enqueue("tests.workers.helpers.slow_record", redis_url, "order", "slow", 3.0, result_ttl=0)
    worker = build_worker(
        redis_client, options(job_lease_seconds=2, heartbeat_seconds=0.25)
    )  # RQ scores: whole s
    done = threading.Event()

    def reaper() -> None:  # another worker's reaper, running all along
        while not done.wait(0.1):
            reap_queue(q(redis.Redis.from_url(redis_url)), now=time.time(), stuck_seconds=10, max_abandons=3)

    thread = threading.Thread(target=reaper)
    thread.start()
    try:
        worker.work(burst=True)
    finally:
        done.set()
        thread.join()
    assert redis_client.lrange("order", 0, -1) == [b"slow"]
    assert redis_client.hget(keys.METRICS_PIPELINE, "jobs_abandoned") is None
    assert queue.failed_job_registry.count == 0  # its own execution outlived the lease: RQ finished it
    assert not redis_client.exists(job.key)


def test_maintenance_runs_once_per_interval_not_per_job(
    redis_url: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes: list[str] = []

    def counting(queue: Queue, **kw: Any) -> Any:
        passes.append(queue.name)
        return reap_queue(queue, **kw)

    monkeypatch.setattr("workers.worker.reap_queue", counting)
    for i in range(5):
        q(redis_client).enqueue(RECORD, redis_url, "order", f"live-{i}")
    run_worker(redis_client, options(reap_interval_seconds=60), burst=True)
    assert redis_client.llen("order") == 5
    assert passes == [LIVE, BACKFILL]  # at start only: the interval has not elapsed since


def test_one_lease_thread_serves_every_job_of_a_worker(redis_url: str, redis_client: redis.Redis) -> None:
    for _ in range(4):
        q(redis_client).enqueue("tests.workers.helpers.record_threads", redis_url, "threads")
    worker = build_worker(redis_client, options())
    worker.work(burst=True)
    seen = [v.decode() for v in redis_client.lrange("threads", 0, -1)]
    assert len(seen) == 4
    assert len(set(seen)) == 1 and seen[0] == f"lease {worker.name}"  # the same one thread every time
    assert not [t for t in threading.enumerate() if t.name == f"lease {worker.name}"]  # stopped at the end


def test_a_busy_worker_stays_alive_in_status_while_its_job_runs(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """The lease thread beats for the worker: RQ's own heartbeat stops while a job runs (failed before)."""
    queue = q(redis_client)
    queue.enqueue("tests.workers.helpers.slow_record", redis_url, "order", "slow", 3.0, result_ttl=0)
    worker = build_worker(redis_client, options(job_lease_seconds=2, heartbeat_seconds=0.25))
    late_in_the_job: list[tuple[int, int]] = []
    done = threading.Event()

    def watch() -> None:
        client = redis.Redis.from_url(redis_url)
        started: float | None = None
        while not done.wait(0.1):
            if started is None and client.llen("order:started"):
                started = time.time()
            running = started is not None and client.llen("order") == 0
            if running and time.time() - started >= 2.0:  # type: ignore[operator]
                # RQ's own last beat came before the job started: 2 s old by now
                late_in_the_job.append(worker_liveness(client, now=time.time(), alive_within=1.5))

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        worker.work(burst=True)
    finally:
        done.set()
        thread.join()
    assert late_in_the_job, "sampled the worker while its job ran"
    assert (1, 0) in late_in_the_job


def test_a_stopping_worker_does_not_wait_on_its_command_channel(redis_client: redis.Redis) -> None:
    # The race that made SIGTERMed workers linger ~60 s: the command-channel thread reads the UNSUBSCRIBE
    # reply and loops before RQ's teardown stops it, then waits for a subscription that never comes.
    worker = build_worker(redis_client, options())
    worker.subscribe()
    worker.pubsub.unsubscribe()
    wait_for(lambda: not worker.pubsub.subscribed, 10, "the channel to be unsubscribed")
    time.sleep(0.2)  # the thread is back in get_message, waiting for a subscription
    started = time.monotonic()
    worker.unsubscribe()  # what RQ's teardown calls
    took = time.monotonic() - started
    assert took < 10, f"stopping the command channel took {took:.1f}s (RQ's 60 s wait is back)"
    worker.pubsub_thread.join(5)
    assert not worker.pubsub_thread.is_alive()
