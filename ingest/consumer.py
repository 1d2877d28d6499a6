"""The stream consumer (``fixmem ingest``): consumer group -> routed batches -> RQ jobs -> XACK.

One cycle: read up to ``read_count`` entries per stream (``XREADGROUP``, blocking at most
``read_block_ms``), and while there is a backlog keep reading without blocking up to
``batch_max_events``; check what routing needs (``batching.classify``: the worker validates the rest);
dead-letter the refused; group the accepted ones by (owner, project_key)
and pack whole groups into jobs of up to ``job_pack_events`` (jobs span projects; a bigger group has
jobs of its own, cut at ``job_max_events``); then, in ONE ``MULTI/EXEC``: name each job's stream ids in
its batch hash and hold them (``keys.held``: the events stay in the stream, not copied; ``ingest.trim``
keeps every id a job holds), ``enqueue_many`` the jobs, add the dead letters, record the owners'
workspace -> project key pairs (``ingest.workspaces``), and ``XACK`` every id. An entry is never
acknowledged without its job, and never trimmed while its job is unfinished.

Around the cycle: entries pending on a consumer that stopped are reclaimed after ``claim_idle_seconds``
(this consumer's own pending entries at once, on start); an entry delivered more than
``max_deliveries`` times is dead-lettered; streams are trimmed (``ingest.trim``); a queue holding more
than ``backpressure_jobs`` jobs is not fed (while one is paused, reads of the others block at most
``PRESSURED_POLL_SECONDS``); Redis outages are waited out with backoff and logged.

Burst mode (``run(burst=True)``) ends when a read finds nothing and no paused stream holds unread
entries: while backpressure pauses a stream that still has some, it waits for the workers to drain the
queue; if no worker takes a job for ``burst_max_wait_seconds`` it stops and says why (``stop_reason``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import orjson
import redis
from rq import Queue, Retry
from rq.serializers import JSONSerializer

from ingest import dead_letters, keys, schedule, workspaces
from ingest.backoff import Backoff
from ingest.batching import (
    JobPlan,
    Refused,
    StreamEntry,
    classify_all,
    parse_stream_id,
    plan_jobs,
    runs,
)
from ingest.connection import REDIS_DOWN, describe, stream_replies, write_refusal
from ingest.consumer_config import PROCESS_BATCH, ConsumerConfig, ConsumerStats, Route, retry_intervals
from ingest.errors import DeadLetterReason
from ingest.pending import claim_page
from ingest.status import has_undelivered
from ingest.trim import trim_stream

__all__ = ["PROCESS_BATCH", "Consumer", "ConsumerConfig", "ConsumerStats", "Route", "retry_intervals"]

log = logging.getLogger("fixmem.ingest.consumer")

PRESSURED_POLL_SECONDS = schedule.POLL_SECONDS
LONG_PAUSE_SECONDS = schedule.LONG_PAUSE_SECONDS


class Consumer:
    """Reads the streams of ``config.routes`` as one member of ``config.group``."""

    def __init__(
        self,
        client: redis.Redis,
        config: ConsumerConfig,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.config = config
        self.clock = clock
        self.stats = ConsumerStats()
        self._queues = {
            r.queue: Queue(r.queue, connection=client, serializer=JSONSerializer) for r in config.routes
        }
        # 0 retries: none at all (RQ's Retry refuses max=0, so there is no Retry object then)
        self._retry = (
            Retry(max=config.job_retries, interval=retry_intervals(config.job_retries))
            if config.job_retries > 0
            else None
        )
        self._pressured: dict[str, float] = {}  # paused queue -> when the pause began (monotonic)
        self._next_claim = self._next_trim = 0.0  # when the chores fall due (monotonic; see ingest.schedule)
        self._lengths: dict[str, int] = {}  # queue -> jobs, as of the last backpressure check

    # -- the loop ---------------------------------------------------------------------------------

    def run(
        self,
        *,
        burst: bool = False,
        max_events: int | None = None,
        stop: threading.Event | None = None,
    ) -> ConsumerStats:
        """Consume until ``stop`` is set; ``burst``: until nothing is left to read (see the module
        docstring); ``max_events``: that many. The loop does what ``ingest.schedule`` decides.

        Redis outages do not end the loop: it waits with backoff (logged) and resumes.
        """
        stop = stop or threading.Event()
        backoff = Backoff()
        ready = False
        waiting = schedule.BurstWait()
        self._next_claim = self._next_trim = 0.0
        while not stop.is_set():
            try:
                if not ready:
                    self._start(backoff)
                    ready = True
                self._chores(time.monotonic())
                limit = None if max_events is None else max_events - self.stats.handled
                got = self.cycle(limit=limit, block=not burst)
                after = schedule.after_cycle(
                    got=got, handled=self.stats.handled, max_events=max_events, burst=burst
                )
                if after.progress:
                    waiting.reset()
                    if backoff.failures:
                        backoff.reset()
                if after.done or (after.check_burst and self._burst_done(waiting, stop)):
                    break
            except (*REDIS_DOWN, redis.exceptions.ResponseError) as exc:
                self._outage(exc, backoff, stop)
                ready = False
        return self.stats

    def _start(self, backoff: Backoff) -> None:
        """Set up the groups and take back this consumer's own pending entries (after an outage too)."""
        self.setup()
        self.reclaim(own=True)
        if backoff.failures:
            log.info("redis is back at %s: consuming again", describe(self.client))
            backoff.reset()

    def _chores(self, now: float) -> None:
        """Claim idle pending entries and trim the streams when the schedule says they are due."""
        due = schedule.chores(
            now,
            next_claim=self._next_claim,
            next_trim=self._next_trim,
            claim_interval=self.config.claim_interval_seconds,
            trim_interval=self.config.trim_interval_seconds,
        )
        if due.claim:
            self.reclaim()
            self._next_claim = due.next_claim
        if due.trim:
            self.trim()
            self._next_trim = due.next_trim

    def _burst_done(self, waiting: schedule.BurstWait, stop: threading.Event) -> bool:
        """A burst read nothing: whether the run is over (``stats.stop_reason`` says why, if entries are
        left), else wait a poll when the schedule says so."""
        paused = self._paused_with_unread()
        step = schedule.burst_step(
            paused,
            waiting,
            now=time.monotonic(),
            limit=self.config.burst_max_wait_seconds,
            threshold=self.config.backpressure_jobs,
            routes=len(self.config.routes),
        )
        if step.reason is not None:
            self.stats.stop_reason = step.reason
            log.warning("burst stopped: %s", step.reason)
        if step.wait_seconds is not None:
            stop.wait(step.wait_seconds)
        return step.done

    def _outage(self, exc: Exception, backoff: Backoff, stop: threading.Event) -> None:
        """Wait out an unreachable Redis, one refusing writes, or a lost group (recreated at once);
        re-raises any other ResponseError."""
        if not isinstance(exc, REDIS_DOWN) and isinstance(exc, redis.exceptions.ResponseError):
            refusal = write_refusal(exc)
            if refusal is None:
                if "NOGROUP" not in str(exc):
                    raise exc
                log.warning(
                    "consumer group %s is gone (redis restarted empty?): recreating it", self.config.group
                )
                return
            delay = backoff.next()  # out of memory, or a full disk under its AOF: wait it out, then take
            log.warning(  # back at once what this consumer read but did not ack
                "redis at %s refuses writes: %s; nothing acked, retrying in %.1fs",
                describe(self.client), refusal, delay,
            )  # fmt: skip
        else:
            self.stats.reconnects += 1
            delay = backoff.next()
            log.warning("redis unreachable at %s (%s): retrying in %.1fs", describe(self.client), exc, delay)
        stop.wait(delay)

    def setup(self) -> None:
        """Create the consumer group on every stream (from the start: nothing published is skipped)."""
        for route in self.config.routes:
            try:
                self.client.xgroup_create(route.stream, self.config.group, id="0", mkstream=True)
            except redis.exceptions.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    def cycle(self, *, limit: int | None = None, block: bool = True) -> int:
        """Read, validate, enqueue and acknowledge one batch; returns how many entries it handled."""
        cfg = self.config
        routes = self._routes_with_room()
        wanted = schedule.wanted(limit, cfg.batch_max_events)
        read = schedule.first_read(
            wanted=wanted, read_count=cfg.read_count, read_block_ms=cfg.read_block_ms, block=block,
            open_routes=len(routes), routes=len(cfg.routes),
        )  # fmt: skip
        if read is None:
            time.sleep(schedule.idle_seconds(cfg.read_block_ms))
            return 0
        gathered: dict[Route, list[StreamEntry]] = {}
        places: dict[str, tuple[int, int]] = {}  # stream id -> (read, position): adjacent in the stream
        total = 0
        while read is not None:
            routes = self._read(routes, read.count, read.block_ms, gathered, places)
            total = sum(len(v) for v in gathered.values())
            read = schedule.next_read(
                wanted=wanted, gathered=total, filled=bool(routes), read_count=cfg.read_count
            )
        if total:
            self._commit(gathered, {}, places)
        return total

    # -- reading ------------------------------------------------------------------------------------

    def _read(
        self,
        routes: Sequence[Route],
        count: int,
        block_ms: int | None,
        into: dict[Route, list[StreamEntry]],
        places: dict[str, tuple[int, int]],
    ) -> list[Route]:
        """One XREADGROUP over ``routes``, blocking up to ``block_ms`` (None: not at all); returns the
        routes that filled ``count`` (more may wait). ``places`` gets each id's (read, position)."""
        by_stream = {r.stream: r for r in routes}
        reply = self.client.xreadgroup(
            self.config.group,
            self.config.consumer,
            {r.stream: ">" for r in routes},
            count=count,
            block=block_ms,
        )
        full: list[Route] = []
        for stream, rows in stream_replies(reply):
            route = by_stream[stream]
            got = [StreamEntry(i, f) for i, f in rows]
            into.setdefault(route, []).extend(got)
            read = len(places)  # unique per reply: ids are never placed twice in one cycle
            places.update((e.stream_id, (read, n)) for n, e in enumerate(got))
            if len(got) >= count:
                full.append(route)
        return full

    def _paused_with_unread(self) -> dict[Route, int]:
        """Routes paused by backpressure whose stream still holds unread entries -> their queue's jobs."""
        return {
            route: self._lengths.get(route.queue, 0)
            for route in self.config.routes
            if route.queue in self._pressured
            and has_undelivered(self.client, route.stream, self.config.group)
        }

    def _routes_with_room(self) -> list[Route]:
        """Routes whose queue is under the backpressure threshold (one round trip); logs changes."""
        with self.client.pipeline(transaction=False) as pipe:
            for route in self.config.routes:
                pipe.llen(self._queues[route.queue].key)
            lengths = [int(n) for n in pipe.execute()]
        routes = self.config.routes
        self._lengths.update((r.queue, n) for r, n in zip(routes, lengths, strict=True))
        checked = schedule.pressure(
            [(r.queue, n) for r, n in zip(routes, lengths, strict=True)],
            self._pressured,
            threshold=self.config.backpressure_jobs,
            now=time.monotonic(),
        )
        self._pressured = dict(checked.paused)
        for i in checked.began:
            log.debug(
                "backpressure: queue %s holds %d jobs (> %d): pausing reads of %s",
                routes[i].queue, lengths[i], self.config.backpressure_jobs, routes[i].stream,
            )  # fmt: skip
        for i, seconds in checked.ended:
            # Short pauses are the normal rhythm under load (hundreds a minute at half capacity); a
            # long one means the workers fall behind, and that is worth a line.
            log.log(
                logging.INFO if schedule.long_pause(seconds) else logging.DEBUG,
                "backpressure over after %.1f s: queue %s is down to %d jobs",
                seconds, routes[i].queue, lengths[i],
            )  # fmt: skip
        return [routes[i] for i in checked.open]

    def reclaim(self, *, own: bool = False) -> int:
        """Claim entries pending too long on any consumer (``own``: this consumer's, at once) and handle
        them (``ingest.pending.claim_page``: poison entries reach the dead-letter stream)."""
        claimed_total = 0
        for route in self.config.routes:
            while True:
                gathered, deliveries = claim_page(self.client, self.config, route.stream, own=own)
                if not gathered:
                    break
                self._commit({route: gathered}, deliveries)
                claimed_total += len(gathered)
                if own is False and len(gathered) < self.config.read_count:
                    break
        if claimed_total:
            self.stats.reclaimed += claimed_total
            self.client.hincrby(keys.METRICS_PIPELINE, "reclaimed", claimed_total)
            log.info("reclaimed %d pending entries%s", claimed_total, " of a previous run" if own else "")
        return claimed_total

    # -- committing ---------------------------------------------------------------------------------

    def _commit(
        self,
        gathered: Mapping[Route, list[StreamEntry]],
        deliveries: Mapping[str, int],
        places: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        """Validate, plan and, in one MULTI/EXEC, enqueue + dead-letter + XACK everything gathered.

        ``places``: where each id was read (``_read``), so a job's ids adjacent in the stream are runs."""
        cfg = self.config
        now = self.clock()
        with self.client.pipeline(transaction=True) as pipe:
            handled = enqueued = jobs = dead = deleted = 0
            for route, entries in gathered.items():
                live = [e for e in entries if e.fields]
                gone = [e for e in entries if not e.fields]
                poisoned = [e for e in live if deliveries.get(e.stream_id, 1) > cfg.max_deliveries]
                fresh = [e for e in live if deliveries.get(e.stream_id, 1) <= cfg.max_deliveries]
                accepted, refused = classify_all(fresh, max_bytes=cfg.max_event_bytes)
                refused += [_poisoned(e, deliveries[e.stream_id]) for e in poisoned]
                plans = plan_jobs(
                    accepted,
                    tag=route.tag,
                    max_events=route.job_max_events or cfg.job_max_events,
                    max_bytes=cfg.job_max_bytes,
                    by_project=route.by_project,
                    pack_events=cfg.job_pack_events,
                )
                self._enqueue(pipe, route, plans, places or {})
                workspaces.record(
                    pipe, workspaces.pairs_of((a.owner, a.workspace, a.project_key) for a in accepted)
                )
                for item in refused:
                    self._dead_letter(pipe, route, item, now, deliveries.get(item.stream_id))
                pipe.xack(route.stream, cfg.group, *[e.stream_id for e in entries])
                handled += len(entries)
                enqueued += len(accepted)
                jobs += len(plans)
                dead += len(refused)
                deleted += len(gone)
            if jobs:
                pipe.hincrby(keys.METRICS_PIPELINE, "jobs_enqueued", jobs)
                pipe.hincrby(keys.METRICS_PIPELINE, "events_enqueued", enqueued)
            if deleted:
                pipe.hincrby(keys.METRICS_PIPELINE, "pending_deleted", deleted)
            pipe.execute()
        if deleted:
            log.warning("%d pending entries were deleted from the stream before processing", deleted)
        self.stats.handled += handled
        self.stats.enqueued += enqueued
        self.stats.jobs += jobs
        self.stats.dead_letters += dead
        self.stats.deleted += deleted

    def _enqueue(
        self,
        pipe: redis.client.Pipeline,
        route: Route,
        plans: Sequence[JobPlan],
        places: Mapping[str, tuple[int, int]],
    ) -> None:
        if not plans:
            return
        holds: dict[str, int] = {}
        for plan in plans:  # ids only: the events stay in the stream, held there for the job (ingest.trim)
            mapping: dict[str | bytes, bytes] = dict.fromkeys((e.stream_id for e in plan.events), b"")
            mapping[keys.BATCH_STREAM_FIELD] = route.stream.encode()
            mapping[keys.BATCH_RUNS_FIELD] = orjson.dumps(runs([e.stream_id for e in plan.events], places))
            pipe.hset(keys.batch(plan.job_id), mapping=mapping)  # type: ignore[arg-type]
            holds[plan.job_id] = min(parse_stream_id(e.stream_id)[0] for e in plan.events)
        pipe.zadd(keys.held(route.stream), holds)
        queue = self._queues[route.queue]
        queue.enqueue_many(
            [
                Queue.prepare_data(
                    self.config.job_function,
                    args=(plan.job_id,),
                    job_id=plan.job_id,
                    timeout=self.config.job_timeout_seconds,
                    result_ttl=0,
                    retry=self._retry,
                    description=f"{len(plan.events)} events from {route.stream}",
                )
                for plan in plans
            ],
            pipeline=pipe,
        )

    def _dead_letter(
        self, pipe: redis.client.Pipeline, route: Route, item: Refused, now: float, deliveries: int | None
    ) -> None:
        fields = dead_letters.fields_for(
            reason=item.reason,
            error=item.message,
            origin_stream=route.stream,
            origin_id=item.stream_id,
            payload=item.payload,
            consumer=self.config.consumer,
            now=now,
            deliveries=deliveries,
        )
        dead_letters.add(pipe, self.config.dead_stream, fields, max_len=self.config.dead_stream_max_len)
        reason = item.reason.value
        self.stats.by_reason[reason] = self.stats.by_reason.get(reason, 0) + 1
        log.info("dead letter %s from %s: %s: %s", item.stream_id, route.stream, reason, item.message[:200])

    # -- trimming -----------------------------------------------------------------------------------

    def trim(self) -> None:
        """Trim acknowledged entries from every stream and enforce the hard cap."""
        for route in self.config.routes:
            result = trim_stream(self.client, route.stream, max_len=self.config.stream_max_len)
            self.stats.trimmed_acked += result.acked
            self.stats.trimmed_over_cap += result.over_cap


def _poisoned(entry: StreamEntry, deliveries: int) -> Refused:
    return Refused(
        entry.stream_id,
        DeadLetterReason.TOO_MANY_DELIVERIES,
        f"delivered {deliveries} times without being acknowledged (a consumer died on it each time?)",
        entry.fields.get(keys.EVENT_FIELD),
    )
