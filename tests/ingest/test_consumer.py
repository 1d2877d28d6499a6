"""The stream consumer on a real Redis: batches, jobs, acks, dead letters, reclaim, backpressure, trim."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
import redis
from rq import Queue, SimpleWorker
from rq.serializers import JSONSerializer

from ingest import keys
from ingest.batching import StreamEntry
from ingest.consumer import LONG_PAUSE_SECONDS, PRESSURED_POLL_SECONDS, Consumer, ConsumerConfig
from ingest.publish import publish_many
from ingest.schedule import BurstWait
from tests import configs
from tests.ingest.turns import turn
from tests.polling import wait_for

LIVE = keys.DEFAULT_LIVE_QUEUE
BACKFILL = keys.DEFAULT_BACKFILL_QUEUE


def config(**overrides: Any) -> ConsumerConfig:
    quick = {"read_block_ms": 20, "claim_idle_seconds": 60, "trim_interval_seconds": 3600}
    return configs.consumer_config(**{**quick, **overrides})


def queue(client: redis.Redis, name: str = LIVE) -> Queue:
    return Queue(name, connection=client, serializer=JSONSerializer)


def waiting_jobs(client: redis.Redis, jobs: int) -> Queue:
    """The live queue holding ``jobs`` placeholder job ids that no worker takes (for backpressure)."""
    live = queue(client)
    client.rpush(live.key, *(f"placeholder-{i}" for i in range(jobs)))
    return live


def batch_events(client: redis.Redis, job_id: str) -> dict[str, bytes]:
    raw = client.hgetall(keys.batch(job_id))
    return {
        k.decode(): v for k, v in raw.items() if k not in (keys.BATCH_STREAM_FIELD, keys.BATCH_RUNS_FIELD)
    }


def jobs_done(client: redis.Redis, stream: str = keys.DEFAULT_STREAM) -> None:
    """What a worker's commit does for the trim: its job no longer holds its ids (no worker runs here)."""
    client.delete(keys.held(stream))


def pending(client: redis.Redis, stream: str = keys.DEFAULT_STREAM) -> int:
    return int(client.xpending(stream, keys.DEFAULT_GROUP)["pending"])


def unread(client: redis.Redis, stream: str = keys.DEFAULT_STREAM) -> int:
    """Entries of ``stream`` past the group's last-delivered id."""
    [group] = client.xinfo_groups(stream)
    return len(client.xrange(stream, min=b"(" + group["last-delivered-id"]))


def test_valid_events_become_jobs_of_whole_projects_and_are_acked(redis_client: redis.Redis) -> None:
    events = [turn(i, project=f"p{i % 3}") for i in range(30)]
    ids = publish_many(redis_client, events)
    project_of = dict(zip(ids, (f"p{i % 3}" for i in range(30)), strict=True))
    stats = Consumer(redis_client, config(job_max_events=10)).run(burst=True)
    assert (stats.handled, stats.enqueued, stats.jobs, stats.dead_letters) == (30, 30, 3, 0)
    assert pending(redis_client) == 0
    jobs = queue(redis_client).get_jobs()
    assert len(jobs) == 3
    seen: dict[str, bytes] = {}
    for job in jobs:
        assert job.func_name == "workers.jobs.process_stream_batch"
        assert list(job.args) == [job.id]  # the payload is the batch id: small JSON
        assert job.retries_left == 8
        events_of_job = batch_events(redis_client, job.id)
        assert len({project_of[i] for i in events_of_job}) == 1  # 10 a project: one project a job
        assert redis_client.hget(keys.batch(job.id), keys.BATCH_STREAM_FIELD) == keys.DEFAULT_STREAM.encode()
        seen.update(events_of_job)
    assert sorted(seen) == sorted(ids)
    raw = redis_client.hget(f"rq:job:{jobs[0].id}", "data")
    assert raw is not None and b"pickle" not in raw and raw.startswith(b"x")  # rq's zlib'd JSON
    assert redis_client.hget(keys.METRICS_PIPELINE, "events_enqueued") == b"30"


def test_live_jobs_span_projects_so_a_steady_flow_is_not_one_job_per_project(
    redis_client: redis.Redis,
) -> None:
    """A few events each from many projects (what one read of a steady flow brings) make one job, not
    one per project: at 200 events/s over 50 projects, one job per project kept p50 at ~280 ms, spanning
    jobs at ~94 ms (docs/decisions/0013-benchmarks.md)."""
    ids = publish_many(redis_client, [turn(i, project=f"p{i % 20}") for i in range(40)])
    stats = Consumer(redis_client, config()).run(burst=True)
    assert (stats.handled, stats.jobs) == (40, 1)
    (job,) = queue(redis_client).get_jobs()
    assert sorted(batch_events(redis_client, job.id)) == sorted(ids)


def test_same_entries_plan_the_same_job_ids(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(5)])
    consumer = Consumer(redis_client, config())
    consumer.setup()
    reply = redis_client.xreadgroup(keys.DEFAULT_GROUP, "c1", {keys.DEFAULT_STREAM: ">"}, count=10)
    entries = [StreamEntry(i.decode(), f) for i, f in reply[0][1]]
    route = consumer.config.routes[0]
    consumer._commit({route: entries}, {})
    consumer._commit({route: entries}, {})  # a second consumer after a crash re-plans the same batch
    assert queue(redis_client).job_ids.count(queue(redis_client).job_ids[0]) == 2
    assert len(set(queue(redis_client).job_ids)) == 1


def test_invalid_events_are_dead_lettered_and_the_rest_go_on(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(1), turn(2)])
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": b"{broken"})
    redis_client.xadd(keys.DEFAULT_STREAM, {"payload": b"{}"})
    redis_client.xadd(keys.DEFAULT_STREAM, {"event": b'{"v": 2}'})
    publish_many(redis_client, [turn(3)])
    stats = Consumer(redis_client, config()).run(burst=True)
    assert (stats.handled, stats.enqueued, stats.dead_letters) == (6, 3, 3)
    assert stats.by_reason == {"invalid_json": 1, "missing_field": 1, "unsupported_version": 1}
    letters = redis_client.xrange(keys.DEFAULT_DEAD_STREAM)
    assert [f[b"reason"] for _, f in letters] == [b"invalid_json", b"missing_field", b"unsupported_version"]
    assert letters[0][1][b"event"] == b"{broken"
    assert pending(redis_client) == 0
    assert sum(len(batch_events(redis_client, j)) for j in queue(redis_client).job_ids) == 3


def test_backfill_stream_goes_to_the_backfill_queue(redis_client: redis.Redis) -> None:
    publish_many(
        redis_client, [turn(i, project="old") for i in range(4)], stream=keys.DEFAULT_BACKFILL_STREAM
    )
    publish_many(redis_client, [turn(9, project="new")])
    Consumer(redis_client, config()).run(burst=True)
    [live_job] = queue(redis_client).job_ids
    [old_job] = queue(redis_client, BACKFILL).job_ids
    assert live_job.startswith("fx-live-")
    assert old_job.startswith("fx-backfill-")
    assert len(batch_events(redis_client, old_job)) == 4


def test_max_events_stops_exactly_and_leaves_the_rest_unread(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(25)])
    stats = Consumer(redis_client, config(read_count=10)).run(max_events=12)
    assert stats.handled == 12
    assert pending(redis_client) == 0
    assert Consumer(redis_client, config(read_count=10)).run(burst=True).handled == 13


def test_a_backlog_is_gathered_into_bigger_jobs(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(120)])
    stats = Consumer(redis_client, config(read_count=20, batch_max_events=100)).run(burst=True)
    assert stats.handled == 120
    assert sorted(len(batch_events(redis_client, j)) for j in queue(redis_client).job_ids) == [20, 100]


def _read_without_ack(client: redis.Redis, consumer: str, count: int = 100) -> list[bytes]:
    Consumer(client, config(consumer=consumer)).setup()
    reply = client.xreadgroup(keys.DEFAULT_GROUP, consumer, {keys.DEFAULT_STREAM: ">"}, count=count)
    return [i for i, _ in reply[0][1]]


def test_a_second_consumer_reclaims_what_a_dead_one_held(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(10)])
    held = _read_without_ack(redis_client, "dead-consumer")  # it read, then died before enqueueing
    assert len(held) == 10 and pending(redis_client) == 10
    survivor = Consumer(redis_client, config(consumer="c2", claim_idle_seconds=60))
    assert survivor.run(burst=True).handled == 0  # not idle long enough yet: not taken
    # a minute passes without the dead consumer acking: XCLAIM ... IDLE sets the idle time it would have
    redis_client.xclaim(keys.DEFAULT_STREAM, keys.DEFAULT_GROUP, "dead-consumer", 0, held, idle=61_000)
    stats = survivor.run(burst=True)
    assert (stats.reclaimed, stats.enqueued) == (10, 10)
    assert pending(redis_client) == 0
    assert sorted(
        k.encode() for j in queue(redis_client).job_ids for k in batch_events(redis_client, j)
    ) == sorted(held)


def test_a_restarted_consumer_takes_back_its_own_pending_at_once(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(4)])
    _read_without_ack(redis_client, "c1")
    stats = Consumer(redis_client, config(consumer="c1", claim_idle_seconds=3600)).run(burst=True)
    assert (stats.reclaimed, stats.enqueued) == (4, 4)
    assert pending(redis_client) == 0


def test_an_entry_delivered_too_often_is_dead_lettered(redis_client: redis.Redis) -> None:
    [poison] = publish_many(redis_client, [turn(1)])
    _read_without_ack(redis_client, "c1")  # delivered once, then its consumer died
    for _ in range(3):  # three more consumers claimed it and died on it
        redis_client.xclaim(keys.DEFAULT_STREAM, keys.DEFAULT_GROUP, "c1", 0, [poison])
    deliveries = redis_client.xpending_range(keys.DEFAULT_STREAM, keys.DEFAULT_GROUP, "-", "+", 1)[0]
    assert deliveries["times_delivered"] == 4
    stats = Consumer(redis_client, config(consumer="c1", max_deliveries=4)).run(burst=True)
    assert (stats.dead_letters, stats.enqueued) == (1, 0)
    [(_, letter)] = redis_client.xrange(keys.DEFAULT_DEAD_STREAM)
    assert letter[b"reason"] == b"too_many_deliveries"
    assert letter[b"deliveries"] == b"5"
    assert letter[b"origin_id"] == poison.encode()
    assert letter[b"event"]  # the payload is kept for replay


def test_pending_entries_deleted_from_the_stream_are_acked_and_counted(redis_client: redis.Redis) -> None:
    ids = publish_many(redis_client, [turn(i) for i in range(3)])
    _read_without_ack(redis_client, "c1")
    redis_client.xdel(keys.DEFAULT_STREAM, ids[1])
    stats = Consumer(redis_client, config(consumer="c1")).run(burst=True)
    assert (stats.enqueued, stats.deleted) == (2, 1)
    assert pending(redis_client) == 0
    assert redis_client.hget(keys.METRICS_PIPELINE, "pending_deleted") == b"1"


def test_backpressure_pauses_reading_until_the_queue_drains(redis_client: redis.Redis) -> None:
    live = waiting_jobs(redis_client, 3)
    publish_many(redis_client, [turn(i) for i in range(5)])
    consumer = Consumer(redis_client, config(backpressure_jobs=2))
    consumer.setup()
    assert consumer.cycle(block=False) == 0
    assert redis_client.xinfo_groups(keys.DEFAULT_STREAM)[0]["last-delivered-id"] == b"0-0"  # unread
    redis_client.delete(live.key)
    assert consumer.cycle(block=False) == 5


def test_a_short_backpressure_pause_logs_no_info_line_and_a_long_one_does(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """At half capacity the queue crosses the threshold hundreds of times a minute: one INFO line per
    crossing buried the log (684 lines in a 30 s run of bench.latency)."""
    consumer = Consumer(redis_client, config(backpressure_jobs=2))
    consumer.setup()
    caplog.set_level(logging.INFO, logger="fixmem.ingest.consumer")
    for paused_for in (0.0, LONG_PAUSE_SECONDS + 1):
        live = waiting_jobs(redis_client, 3)
        assert consumer.cycle(block=False) == 0  # paused
        consumer._pressured[live.name] -= paused_for  # as if the pause had begun that long ago
        redis_client.delete(live.key)
        consumer.cycle(block=False)  # resumed
    infos = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(infos) == 1, infos
    assert infos[0].startswith(f"backpressure over after {LONG_PAUSE_SECONDS + 1:.1f} s")


def test_while_live_is_paused_the_backfill_read_blocks_only_as_long_as_a_poll(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read blocking read_block_ms on the (empty) backfill stream while live was paused held live events
    back ~1 s a cycle under a steady 200 events/s."""
    blocks: list[int | None] = []
    real = redis_client.xreadgroup

    def spy(*args: Any, **kwargs: Any) -> Any:
        blocks.append(kwargs.get("block"))
        return real(*args, **kwargs)

    consumer = Consumer(redis_client, config(backpressure_jobs=2, read_block_ms=1000))
    consumer.setup()
    monkeypatch.setattr(redis_client, "xreadgroup", spy)
    live = waiting_jobs(redis_client, 3)
    assert consumer.cycle() == 0  # live paused: only the backfill stream is read
    redis_client.delete(live.key)
    publish_many(redis_client, [turn(0)])
    assert consumer.cycle() == 1
    assert blocks == [int(PRESSURED_POLL_SECONDS * 1000), 1000]


def test_out_of_memory_pauses_the_consumer_without_losing_anything(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    publish_many(redis_client, [turn(i) for i in range(5)])
    old = redis_client.config_get("maxmemory")["maxmemory"]
    consumer = Consumer(redis_client, config(read_block_ms=50))
    consumer.setup()
    redis_client.config_set("maxmemory", "1")  # noeviction: every write is refused
    stop = threading.Event()
    thread = threading.Thread(target=consumer.run, kwargs={"stop": stop})
    caplog.set_level(logging.WARNING, logger="fixmem.ingest.consumer")
    try:
        thread.start()
        wait_for(lambda: any("refuses writes" in r.getMessage() for r in caplog.records), 30, "a refusal")
        assert thread.is_alive() and consumer.stats.handled == 0
        # nothing acked without its job: each event is still pending or still unread, and no job exists
        assert pending(redis_client) + unread(redis_client) == 5
        assert queue(redis_client).job_ids == []
        redis_client.config_set("maxmemory", old)
        wait_for(lambda: consumer.stats.handled >= 5, 30, "the consumer to handle all five")
    finally:
        redis_client.config_set("maxmemory", old)
        stop.set()
        thread.join(10)
    assert consumer.stats.handled == 5
    assert len(queue(redis_client).job_ids) == 1


def test_a_write_refused_after_the_read_acks_nothing_and_the_events_come_back(
    redis_client: redis.Redis,
) -> None:
    """Out of memory between XREADGROUP (not refused) and the MULTI/EXEC: no job, no ack, all five pending."""
    publish_many(redis_client, [turn(i) for i in range(5)])
    old = redis_client.config_get("maxmemory")["maxmemory"]
    consumer = Consumer(redis_client, config())
    consumer.setup()
    redis_client.config_set("maxmemory", "1")
    try:
        with pytest.raises(redis.exceptions.ResponseError, match="maxmemory"):
            consumer.cycle(block=False)
        assert (pending(redis_client), unread(redis_client)) == (5, 0)  # read, and acked without a job: none
        assert queue(redis_client).job_ids == []
    finally:
        redis_client.config_set("maxmemory", old)
    stats = Consumer(redis_client, config()).run(burst=True)  # a restart takes its own pending back
    assert (stats.reclaimed, stats.enqueued) == (5, 5)
    assert pending(redis_client) == 0
    assert len(queue(redis_client).job_ids) == 1


def test_the_loop_stops_when_asked(redis_client: redis.Redis) -> None:
    stop = threading.Event()
    consumer = Consumer(redis_client, config(read_block_ms=50))
    thread = threading.Thread(target=consumer.run, kwargs={"stop": stop})
    thread.start()
    publish_many(redis_client, [turn(1)])
    wait_for(lambda: consumer.stats.handled >= 1, 10, "the consumer to handle the event")
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert consumer.stats.handled == 1


def test_trim_keeps_what_any_group_still_needs(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(300)])
    redis_client.xgroup_create(keys.DEFAULT_STREAM, "archiver", id="0")
    consumer = Consumer(redis_client, config())
    consumer.run(burst=True)
    jobs_done(redis_client)
    consumer.trim()
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 300  # the archiver has read nothing
    reply = redis_client.xreadgroup("archiver", "a", {keys.DEFAULT_STREAM: ">"}, count=250)
    read = [i for i, _ in reply[0][1]]
    redis_client.xack(keys.DEFAULT_STREAM, "archiver", *read[:200])  # acked 200, holds 50
    consumer.trim()
    assert 100 <= redis_client.xlen(keys.DEFAULT_STREAM) < 300
    [(oldest, _)] = redis_client.xrange(keys.DEFAULT_STREAM, count=1)
    assert oldest <= read[200]  # nothing the archiver still holds was trimmed


def test_trim_removes_acknowledged_and_enforces_the_cap(redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(600)])
    consumer = Consumer(redis_client, config(stream_max_len=1000))
    consumer.run(burst=True)
    jobs_done(redis_client)
    consumer.trim()
    assert redis_client.xlen(keys.DEFAULT_STREAM) < 200  # approximate MINID trim: whole nodes only
    publish_many(redis_client, [turn(i) for i in range(1200)])
    capped = Consumer(redis_client, config(stream_max_len=1000))
    capped.setup()
    capped.trim()
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 1000
    assert capped.stats.trimmed_over_cap > 0
    assert (
        int(redis_client.hget(keys.METRICS_PIPELINE, "trimmed_over_cap") or 0)
        == capped.stats.trimmed_over_cap
    )


@pytest.mark.parametrize("protocol", [2, 3])
def test_both_resp_protocols(redis_url: str, redis_client: redis.Redis, protocol: int) -> None:
    client = redis.Redis.from_url(redis_url, protocol=protocol)
    publish_many(client, [turn(i) for i in range(3)])
    assert Consumer(client, config()).run(burst=True).enqueued == 3


@pytest.mark.parametrize(("retries", "scheduled", "failed"), [(0, 0, 1), (2, 1, 0)])
def test_job_retries_zero_means_no_retry(
    redis_client: redis.Redis, retries: int, scheduled: int, failed: int
) -> None:
    """FIXMEM_JOB_RETRIES=0 validates; the consumer must then enqueue jobs without a retry (RQ's
    ``Retry(max=0)`` raises, which killed the consumer at start). A failing job goes straight to failed."""
    publish_many(redis_client, [turn(1)])
    consumer = Consumer(redis_client, config(job_retries=retries, job_function="tests.workers.helpers.fail"))
    assert consumer.run(burst=True).enqueued == 1
    [job] = queue(redis_client).get_jobs()
    assert job.retries_left == (retries or None)
    SimpleWorker([queue(redis_client)], connection=redis_client, serializer=JSONSerializer).work(burst=True)
    assert queue(redis_client).scheduled_job_registry.count == scheduled  # waiting for its retry
    assert queue(redis_client).failed_job_registry.count == failed


def _drain(client: redis.Redis, key: str, stop: threading.Event) -> None:
    """A stand-in for the workers: take one job off the queue every 20 ms."""
    while not stop.wait(0.02):
        client.lpop(key)


def test_burst_waits_out_backpressure_and_reads_everything(redis_client: redis.Redis) -> None:
    """``run(burst=True)`` ended at the first cycle that read nothing, and a paused cycle reads nothing:
    ``fixmem ingest --burst`` exited with the stream unread while the queue was over the threshold."""
    live = waiting_jobs(redis_client, 4)
    publish_many(redis_client, [turn(i, project=f"p{i}") for i in range(12)])
    consumer = Consumer(redis_client, config(backpressure_jobs=2, read_count=3, batch_max_events=3))
    stop = threading.Event()
    drainer = threading.Thread(target=_drain, args=(redis_client, live.key, stop))
    drainer.start()
    try:
        stats = consumer.run(burst=True)
    finally:
        stop.set()
        drainer.join()
    assert (stats.handled, stats.stop_reason) == (12, None)
    assert pending(redis_client) == 0


def test_burst_stops_when_the_paused_queue_does_not_move_and_says_why(redis_client: redis.Redis) -> None:
    waiting_jobs(redis_client, 3)
    publish_many(redis_client, [turn(i) for i in range(5)])
    consumer = Consumer(redis_client, config(backpressure_jobs=2, burst_max_wait_seconds=0.2))
    stats = consumer.run(burst=True)
    assert stats.handled == 0
    assert stats.stop_reason is not None
    assert "fixmem-live holds 3 jobs" in stats.stop_reason and "fixmem:turns" in stats.stop_reason
    assert "no worker took a job" in stats.stop_reason


def test_burst_over_the_threshold_with_nothing_unread_stops_at_once(redis_client: redis.Redis) -> None:
    waiting_jobs(redis_client, 3)
    consumer = Consumer(redis_client, config(backpressure_jobs=2, burst_max_wait_seconds=3600))
    stats = consumer.run(burst=True)  # would wait an hour if it waited for the queue
    assert (stats.handled, stats.stop_reason) == (0, None)


def test_a_burst_waits_from_the_last_time_a_paused_queue_got_shorter() -> None:
    """The give-up clock restarts whenever a paused queue gets shorter, not at the first pause: a slow
    worker that keeps taking jobs never makes ``--burst`` give up (the test above drains too fast to tell)."""
    live = config().routes[0]
    waiting = BurstWait()
    assert waiting.check({live: 5}, 0.0, 10.0, 4) is None
    assert waiting.check({live: 5}, 9.0, 10.0, 4) is None
    assert waiting.check({live: 4}, 9.5, 10.0, 4) is None  # a worker took one: the clock restarts
    assert waiting.check({live: 6}, 19.0, 10.0, 4) is None  # a new job is no progress, but only 9.5 s
    reason = waiting.check({live: 6}, 19.6, 10.0, 4)
    assert reason is not None and f"queue {live.queue} holds 6 jobs (> 4, backpressure)" in reason
