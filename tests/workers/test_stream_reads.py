"""Jobs name stream ids; the worker reads its events from the stream (issue 21, "no copy").

Real Redis, the real consumer, real RQ workers (``run_worker``), real files: the batch hash holds ids
only, the trim keeps every id a job that will run holds, a job that will not run has its events copied
out before they are trimmed, an id gone from the stream is a dead letter with its reason, and a job run
twice appends once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from ingest import keys
from ingest.batching import parse_stream_id
from ingest.consumer import Consumer
from ingest.publish import publish_many
from store import AppendResult, StoreUnavailable
from tests import configs, signals
from tests.ingest.turns import turn
from workers import counters, jobs
from workers.counters import read_counters
from workers.jobs import WorkerContext, run_batch
from workers.worker import FixmemQueue, run_worker

STREAM = keys.DEFAULT_STREAM
OWNER, PROJECT = "alice", "github.com/acme/widgets"


@pytest.fixture(autouse=True)
def _keep_signal_handlers() -> Iterator[None]:
    with signals.handlers_kept():
        yield


@pytest.fixture
def ctx(redis_client: redis.Redis, data_dir: Path) -> Iterator[WorkerContext]:
    context = configs.worker_context(redis_client, configs.fix_store(data_dir), name="w1")
    jobs.install(context)
    yield context
    jobs.install(None)


def consume(client: redis.Redis, **overrides: Any) -> Consumer:
    quick = {"read_block_ms": 20, "claim_idle_seconds": 60, "trim_interval_seconds": 3600}
    consumer = Consumer(client, configs.consumer_config(**{**quick, **overrides}))
    consumer.run(burst=True)
    return consumer


def work(client: redis.Redis) -> None:
    run_worker(client, configs.worker_options(queues=(keys.DEFAULT_LIVE_QUEUE,)), burst=True)


def batches(client: redis.Redis) -> dict[str, dict[bytes, bytes]]:
    return {
        k.decode().removeprefix(keys.batch("")): client.hgetall(k)  # type: ignore[misc]
        for k in client.scan_iter(match=keys.batch("*"))
    }


def nonzero(counts: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in counts.items() if v}


def counted(client: redis.Redis) -> dict[str, Any]:
    """The fleet's events by result (those not zero)."""
    return nonzero(read_counters(client).events)


def stored(ctx: WorkerContext) -> int:
    return len(ctx.store.read(OWNER, PROJECT).entries)


def test_a_batch_names_ids_and_the_worker_reads_them_from_the_stream(
    redis_client: redis.Redis, ctx: WorkerContext
) -> None:
    ids = publish_many(redis_client, [turn(i) for i in range(30)])
    consume(redis_client, job_max_events=10)
    held = batches(redis_client)
    assert len(held) == 3
    for fields in held.values():
        events = {k: v for k, v in fields.items() if k.decode()[0].isdigit()}  # the stream ids
        assert set(events.values()) == {b""}  # ids only: no event is copied out of the stream
    assert sorted(k.decode() for f in held.values() for k in f if k.decode()[0].isdigit()) == sorted(ids)
    assert redis_client.zcard(keys.held(STREAM)) == 3
    cuts = [orjson.loads(f[keys.BATCH_RUNS_FIELD]) for f in held.values()]
    cuts.sort(key=lambda c: parse_stream_id(c[0][0]))
    assert cuts == [[[ids[k], ids[k + 9], 10]] for k in (0, 10, 20)]  # one read: one XRANGE a job
    work(redis_client)
    assert stored(ctx) == 30
    assert counted(redis_client) == {"recorded": 30}
    assert batches(redis_client) == {} and redis_client.zcard(keys.held(STREAM)) == 0


def test_an_id_gone_from_the_stream_is_a_dead_letter_with_its_reason(
    redis_client: redis.Redis, ctx: WorkerContext
) -> None:
    ids = publish_many(redis_client, [turn(i) for i in range(3)])
    consume(redis_client)
    redis_client.xdel(STREAM, ids[1])  # an operator deleted it after it was enqueued
    work(redis_client)
    assert stored(ctx) == 2
    fleet = read_counters(redis_client)
    assert counted(redis_client) == {"recorded": 2, "dead_letter": 1}
    assert nonzero(fleet.dead_letters) == {"missing_from_stream": 1}
    [(_, letter)] = redis_client.xrange(keys.DEFAULT_DEAD_STREAM)
    assert letter[b"reason"] == b"missing_from_stream"
    assert letter[b"origin_id"] == ids[1].encode() and letter[b"origin_stream"] == STREAM.encode()
    assert b"gone from fixmem:turns" in letter[b"error"]


def test_the_trim_never_removes_an_id_a_queued_job_holds(
    redis_client: redis.Redis, ctx: WorkerContext
) -> None:
    publish_many(redis_client, [turn(i) for i in range(300)])
    consumer = consume(redis_client)
    assert int(redis_client.xpending(STREAM, keys.DEFAULT_GROUP)["pending"]) == 0  # all acknowledged
    assert len(FixmemQueue(keys.DEFAULT_LIVE_QUEUE, connection=redis_client).job_ids) >= 1
    consumer.trim()
    assert redis_client.xlen(STREAM) == 300  # acknowledged, but queued jobs hold them
    work(redis_client)
    assert stored(ctx) == 300
    consumer.trim()
    assert redis_client.xlen(STREAM) < 300  # done: now trimmed (MINID ~ removes whole nodes only)


def test_over_the_cap_a_held_id_is_trimmed_and_dead_lettered_never_silently_lost(
    redis_client: redis.Redis, ctx: WorkerContext
) -> None:
    publish_many(redis_client, [turn(i) for i in range(300)])
    consume(redis_client)  # all read and enqueued, then the cap comes down
    capped = Consumer(redis_client, configs.consumer_config(stream_max_len=100))
    capped.trim()
    assert capped.stats.trimmed_over_cap == 200
    work(redis_client)
    fleet = read_counters(redis_client)
    assert counted(redis_client) == {"recorded": 100, "dead_letter": 200}
    assert nonzero(fleet.dead_letters) == {"missing_from_stream": 200}
    assert stored(ctx) == 100  # the counters equal the store


def test_a_failed_job_has_its_events_copied_out_and_runs_when_requeued(
    redis_client: redis.Redis, ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_many(redis_client, [turn(i) for i in range(20)])
    consumer = consume(redis_client, job_retries=0)
    [job_id] = batches(redis_client)

    def unavailable(*args: object, **kwargs: object) -> AppendResult:
        raise StoreUnavailable(ctx.store.root, "no space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(ctx.store, "append", unavailable)
        work(redis_client)
    job = Job.fetch(job_id, connection=redis_client, serializer=JSONSerializer)
    assert job.get_status() == JobStatus.FAILED
    consumer.trim()  # the failed job does not pin the stream: its events go to its batch hash first
    assert redis_client.zcard(keys.held(STREAM)) == 0
    fields = batches(redis_client)[job_id]
    events = {k: v for k, v in fields.items() if k.decode()[0].isdigit()}  # the stream ids
    assert len(events) == 20 and b"" not in events.values()
    redis_client.xtrim(STREAM, maxlen=0)  # even if the stream loses them all now
    FixmemQueue(keys.DEFAULT_LIVE_QUEUE, connection=redis_client).failed_job_registry.requeue(job_id)
    work(redis_client)
    assert stored(ctx) == 20
    assert counted(redis_client) == {"recorded": 20}


def test_a_job_run_twice_appends_once_and_counts_once(
    redis_client: redis.Redis, ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_many(redis_client, [turn(i) for i in range(10)])
    consume(redis_client)
    [job_id] = batches(redis_client)

    def dies(*args: object, **kwargs: object) -> None:
        raise ConnectionError("the worker died after its append, before its commit")

    with monkeypatch.context() as patched:
        patched.setattr(counters, "commit", dies)
        with pytest.raises(ConnectionError):
            run_batch(ctx, job_id)
    assert stored(ctx) == 10 and redis_client.zcard(keys.held(STREAM)) == 1  # still held: not done
    consume(redis_client).trim()
    assert redis_client.xlen(STREAM) == 10
    assert run_batch(ctx, job_id).events == {"recorded": 10}  # the second run reads the stream again
    assert run_batch(ctx, job_id).events == {}  # and a third finds the batch done
    assert stored(ctx) == 10
    assert counted(redis_client) == {"recorded": 10}
    assert redis_client.zcard(keys.held(STREAM)) == 0
