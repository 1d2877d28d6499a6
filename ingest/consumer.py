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
from dataclasses import dataclass, field
from typing import Any, cast

import orjson
import redis
from rq import Queue, Retry
from rq.serializers import JSONSerializer

from ingest import dead_letters, keys, workspaces
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
from ingest.connection import REDIS_DOWN, describe, entry_rows, reply_text, stream_replies, write_refusal
from ingest.errors import DeadLetterReason
from ingest.status import has_undelivered
from ingest.trim import trim_stream

log = logging.getLogger("fixmem.ingest.consumer")

# The job function, by import path (ingest imports no workers); named for stream-id batches.
PROCESS_BATCH = "workers.jobs.process_stream_batch"
PRESSURED_POLL_SECONDS = 0.05  # how often a paused consumer checks the queues again (one LLEN pipeline)
LONG_PAUSE_SECONDS = 5.0  # a backpressure pause this long is logged at INFO when it ends (shorter: DEBUG)


@dataclass(frozen=True, slots=True)
class Route:
    """One stream and the RQ queue its jobs go to; ``tag`` goes into job ids (``live``, ``backfill``).

    ``by_project`` False (both routes fixmem wires): jobs span projects (``batching.plan_jobs``), so under a
    steady flow a cycle's few events per project make one job, not one per project; True: a job per
    project. ``job_max_events`` overrides the consumer's for this route (backfill jobs stay short, so a
    live job never waits long for a worker).
    """

    stream: str
    queue: str
    tag: str
    by_project: bool = True
    job_max_events: int | None = None


def retry_intervals(retries: int) -> list[int]:
    """Backoff between job retries in seconds: 1, 4, 16, 64, 256, then 600."""
    return [min(600, 4**n) for n in range(retries)]


@dataclass(frozen=True)
class ConsumerConfig:
    """Everything the consumer needs; built from fixmem's settings (which hold the defaults and say what each
    field means) by the composition root, ``fixmem.wiring.consumer_config``."""

    routes: tuple[Route, ...]  # read in this order: live first
    group: str
    consumer: str
    dead_stream: str
    dead_stream_max_len: int
    max_event_bytes: int
    read_count: int
    read_block_ms: int
    batch_max_events: int
    job_max_events: int
    job_pack_events: int
    job_max_bytes: int
    claim_idle_seconds: float
    claim_interval_seconds: float
    max_deliveries: int
    stream_max_len: int
    trim_interval_seconds: float
    backpressure_jobs: int
    job_timeout_seconds: int
    job_retries: int
    burst_max_wait_seconds: float  # burst: give up when a paused queue does not move this long
    job_function: str = PROCESS_BATCH


@dataclass
class ConsumerStats:
    """What this consumer did since it started (the fleet-wide counters live in Redis)."""

    handled: int = 0  # entries acknowledged: enqueued + dead-lettered + deleted
    enqueued: int = 0
    jobs: int = 0
    dead_letters: int = 0
    deleted: int = 0  # pending entries that were gone from the stream when reclaimed
    reclaimed: int = 0
    trimmed_acked: int = 0
    trimmed_over_cap: int = 0
    reconnects: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None  # burst mode only: why it stopped with entries left unread


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
        docstring); ``max_events``: that many.

        Redis outages do not end the loop: it waits with backoff (logged) and resumes.
        """
        stop = stop or threading.Event()
        backoff = Backoff()
        ready = False
        next_claim = next_trim = 0.0
        waiting = _BurstWait()
        while not stop.is_set():
            try:
                if not ready:
                    self.setup()
                    self.reclaim(own=True)
                    ready = True
                    if backoff.failures:
                        log.info("redis is back at %s: consuming again", describe(self.client))
                        backoff.reset()
                now = time.monotonic()
                if now >= next_claim:
                    self.reclaim()
                    next_claim = now + self.config.claim_interval_seconds
                if now >= next_trim:
                    self.trim()
                    next_trim = now + self.config.trim_interval_seconds
                limit = None if max_events is None else max_events - self.stats.handled
                got = self.cycle(limit=limit, block=not burst)
                if got and backoff.failures:
                    backoff.reset()
                if max_events is not None and self.stats.handled >= max_events:
                    break
                if burst and got == 0:
                    paused = self._paused_with_unread()
                    if not paused:
                        break
                    reason = waiting.check(
                        paused,
                        time.monotonic(),
                        self.config.burst_max_wait_seconds,
                        self.config.backpressure_jobs,
                    )
                    if reason is not None:
                        self.stats.stop_reason = reason
                        log.warning("burst stopped: %s", reason)
                        break
                    if len(paused) < len(self.config.routes):  # the open streams' reads did not wait
                        stop.wait(PRESSURED_POLL_SECONDS)
                elif got:
                    waiting.reset()
            except REDIS_DOWN as exc:
                ready = False
                self.stats.reconnects += 1
                delay = backoff.next()
                log.warning(
                    "redis unreachable at %s (%s): retrying in %.1fs", describe(self.client), exc, delay
                )
                stop.wait(delay)
            except redis.exceptions.ResponseError as exc:
                refusal = write_refusal(exc)
                if refusal is not None:  # out of memory, or a full disk under its AOF: wait it out
                    ready = False  # then take back at once what this consumer read but did not ack
                    delay = backoff.next()
                    log.warning(
                        "redis at %s refuses writes: %s; nothing acked, retrying in %.1fs",
                        describe(self.client), refusal, delay,
                    )  # fmt: skip
                    stop.wait(delay)
                    continue
                if "NOGROUP" not in str(exc):
                    raise
                log.warning(
                    "consumer group %s is gone (redis restarted empty?): recreating it", self.config.group
                )
                ready = False
        return self.stats

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
        routes = self._routes_with_room()
        if not routes:  # a short wait: with a low threshold the queue drains in well under a second
            time.sleep(min(PRESSURED_POLL_SECONDS, self.config.read_block_ms / 1000))
            return 0
        wanted = self.config.batch_max_events if limit is None else min(limit, self.config.batch_max_events)
        gathered: dict[Route, list[StreamEntry]] = {}
        places: dict[str, tuple[int, int]] = {}  # stream id -> (read, position): adjacent in the stream
        count = min(self.config.read_count, wanted)
        # While a queue is paused, block only as long as a paused consumer polls: a read blocking
        # read_block_ms on the other (empty) stream held live events back that long every cycle under a
        # steady flow, once the live queue passed the threshold (docs/performance.md, "A paused queue").
        block_ms = self.config.read_block_ms
        if len(routes) < len(self.config.routes):
            block_ms = min(block_ms, int(PRESSURED_POLL_SECONDS * 1000))
        full = self._read(routes, count, block_ms if block else None, gathered, places)
        total = sum(len(v) for v in gathered.values())
        while full and total < wanted:
            count = min(self.config.read_count, wanted - total)
            full = self._read(full, count, None, gathered, places)
            total = sum(len(v) for v in gathered.values())
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
            lengths = pipe.execute()
        open_routes = []
        for route, length in zip(self.config.routes, lengths, strict=True):
            self._lengths[route.queue] = int(length)
            if int(length) > self.config.backpressure_jobs:
                if route.queue not in self._pressured:
                    log.debug(
                        "backpressure: queue %s holds %d jobs (> %d): pausing reads of %s",
                        route.queue, length, self.config.backpressure_jobs, route.stream,
                    )  # fmt: skip
                    self._pressured[route.queue] = time.monotonic()
                continue
            if route.queue in self._pressured:
                paused = time.monotonic() - self._pressured.pop(route.queue)
                # Short pauses are the normal rhythm under load (hundreds a minute at half capacity); a
                # long one means the workers fall behind, and that is worth a line.
                log.log(
                    logging.INFO if paused >= LONG_PAUSE_SECONDS else logging.DEBUG,
                    "backpressure over after %.1f s: queue %s is down to %d jobs",
                    paused, route.queue, length,
                )  # fmt: skip
            open_routes.append(route)
        return open_routes

    def reclaim(self, *, own: bool = False) -> int:
        """Claim entries pending too long on any consumer (``own``: this consumer's, at once) and handle them.

        Uses XPENDING (which reports delivery counts) then XCLAIM with RETRYCOUNT = count + 1, so a
        delivery count grows with every attempt and poison entries reach the dead-letter stream.
        """
        claimed_total = 0
        for route in self.config.routes:
            while True:
                gathered, deliveries = self._claim_page(route, own)
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

    def _claim_page(self, route: Route, own: bool) -> tuple[list[StreamEntry], dict[str, int]]:
        idle_ms = 0 if own else int(self.config.claim_idle_seconds * 1000)
        try:
            pending = self.client.xpending_range(
                route.stream,
                self.config.group,
                min="-",
                max="+",
                count=self.config.read_count,
                consumername=self.config.consumer if own else None,
                idle=None if own else idle_ms,
            )
        except redis.exceptions.ResponseError as exc:
            if "NOGROUP" in str(exc):
                return [], {}
            raise
        if not pending:
            return [], {}
        by_count: dict[int, list[Any]] = {}
        for item in pending:
            message_id = cast(bytes, item["message_id"])
            by_count.setdefault(int(item["times_delivered"]) + 1, []).append(reply_text(message_id))
        with self.client.pipeline(transaction=False) as pipe:
            for retrycount, ids in by_count.items():
                pipe.xclaim(
                    route.stream, self.config.group, self.config.consumer, idle_ms, ids,
                    retrycount=retrycount, justid=True,
                )  # fmt: skip
            claimed = [reply_text(i) for batch in pipe.execute() for i in batch]
        if not claimed:
            return [], {}
        deliveries = {i: n for n, ids in by_count.items() for i in ids}
        with self.client.pipeline(transaction=False) as pipe:
            for entry_id in claimed:
                pipe.xrange(route.stream, min=entry_id, max=entry_id, count=1)
            found = pipe.execute()
        entries = []
        for entry_id, reply in zip(claimed, found, strict=True):
            rows = entry_rows(reply)
            entries.append(StreamEntry(entry_id, rows[0][1] if rows else {}))
        entries.sort(key=lambda e: parse_stream_id(e.stream_id))
        return entries, {e.stream_id: deliveries[e.stream_id] for e in entries}

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


class _BurstWait:
    """How long a burst run has waited on paused queues without any of them getting shorter."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.lowest: dict[str, int] = {}

    def reset(self) -> None:
        self.since = None
        self.lowest = {}

    def check(self, paused: Mapping[Route, int], now: float, limit: float, threshold: int) -> str | None:
        """Note the paused queues' lengths; the reason to stop once none got shorter in ``limit`` s."""
        moved = any(jobs < self.lowest.get(r.queue, jobs + 1) for r, jobs in paused.items())
        if self.since is None or moved:
            self.since = now
            self.lowest = {r.queue: jobs for r, jobs in paused.items()}
            return None
        if now - self.since < limit:
            return None
        held = "; ".join(
            f"queue {r.queue} holds {jobs} jobs (> {threshold}, backpressure), {r.stream} unread"
            for r, jobs in paused.items()
        )
        return f"{held}; no worker took a job for {limit:g}s: start workers (`fixmem worker`) and run again"


def _poisoned(entry: StreamEntry, deliveries: int) -> Refused:
    return Refused(
        entry.stream_id,
        DeadLetterReason.TOO_MANY_DELIVERIES,
        f"delivered {deliveries} times without being acknowledged (a consumer died on it each time?)",
        entry.fields.get(keys.EVENT_FIELD),
    )
