"""Where the pipeline stands, read from Redis: stream length, pending and lag, queues, dead letters.

Read-only and cheap enough for every metrics scrape: a few round trips per stream, and no event payload
but the stream's first and last entries (which ``XINFO STREAM`` returns), however long the backlog.

Lag, the entries not yet delivered to the group, is exact on Redis >= 7 (``XINFO GROUPS`` reports it).
Redis 6.2, the embedded server, has no way to count the entries after an id without loading them (the
old ``#XRANGE`` count loaded up to 10,000 events into Redis's memory per scrape, under noeviction, during
a backlog: docs/decisions/0010-metrics-http-api-tool-deploy.md, "Stream lag without reading the
backlog"), so ``group_lag`` works it out from what 6.2 reports:

- 0, exact, when the group was delivered the stream's last id (caught up: the usual case);
- ``XLEN``, exact, when the stream's first entry comes after the last delivered id (nothing delivered
  is left in the stream);
- otherwise ``XLEN - pending`` (at least 1), an estimate flagged ``lag_exact=False``. It is high by the
  entries the group was delivered and acknowledged but that are not trimmed yet: every consumer trims
  them each ``trim_interval_seconds`` (5 s) down to the stream node holding the oldest entry still
  needed (a node holds at most ``stream-node-max-entries``, 100, and one entry when events exceed
  ``stream-node-max-bytes``, 4 KB), so the excess is at most one node plus what the group acknowledged
  since the last trim (plus what another consumer group still holds, should one read the stream). It is
  low only when the hard length cap deleted pending entries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import redis
from rq import Queue, Worker
from rq.serializers import JSONSerializer
from rq.utils import utcparse

from ingest.batching import parse_stream_id
from ingest.connection import reply_text


@dataclass(frozen=True)
class ConsumerInfo:
    """One consumer of a group: its pending entries and how long since it was last seen (seconds)."""

    name: str
    pending: int
    idle_seconds: float


@dataclass(frozen=True)
class StreamStatus:
    """One stream as the consumer group sees it."""

    stream: str
    length: int
    group: str
    group_exists: bool
    pending: int
    last_delivered: str | None
    lag: int  # entries not yet delivered to the group (an upper bound unless lag_exact: see above)
    lag_exact: bool
    last_generated: str | None = None  # the newest id the stream ever had (None: no stream)
    consumers: list[ConsumerInfo] = field(default_factory=list)


@dataclass(frozen=True)
class Lag:
    """Entries not yet delivered to a group, and whether the figure is exact (else an upper bound)."""

    entries: int
    exact: bool


def group_lag(
    *,
    length: int,
    pending: int,
    last_delivered: str,
    first_id: str | None,
    last_generated: str,
    server_lag: int | None = None,
) -> Lag:
    """The group's lag from what ``XINFO STREAM``/``GROUPS`` report (see the module docstring).

    ``server_lag``: Redis >= 7's own figure (None on 6.2, or when 7 cannot tell after deletions).
    """
    if server_lag is not None:
        return Lag(server_lag, True)
    if length == 0 or parse_stream_id(last_generated) <= parse_stream_id(last_delivered):
        return Lag(0, True)
    if first_id is not None and parse_stream_id(first_id) > parse_stream_id(last_delivered):
        return Lag(length, True)
    return Lag(max(1, length - pending), False)


@dataclass(frozen=True)
class QueueStatus:
    """One RQ queue: jobs waiting, running, waiting for a retry, and failed."""

    name: str
    queued: int
    started: int
    scheduled: int
    failed: int


@dataclass(frozen=True)
class PipelineStatus:
    """Streams, queues, dead letters, and workers alive or registered but silent (``worker_liveness``)."""

    streams: list[StreamStatus]
    queues: list[QueueStatus]
    dead_letters: int
    workers: int
    silent_workers: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON value."""
        return asdict(self)


def stream_status(client: redis.Redis, stream: str, group: str) -> StreamStatus:
    """Length, pending, lag and consumers of ``stream`` for ``group`` (four round trips, no backlog read)."""
    try:
        info = client.xinfo_stream(stream)
    except redis.exceptions.ResponseError:  # no such key
        return StreamStatus(stream, 0, group, False, 0, None, 0, True)
    length = int(info["length"])
    last_generated = reply_text(info["last-generated-id"])
    first = info.get("first-entry")
    first_id = reply_text(first[0]) if first else None
    found = next((g for g in client.xinfo_groups(stream) if reply_text(g["name"]) == group), None)
    if found is None:
        return StreamStatus(stream, length, group, False, 0, None, length, True, last_generated)
    last = reply_text(found["last-delivered-id"])
    pending = int(found["pending"])
    server_lag = found.get("lag")
    lag = group_lag(
        length=length,
        pending=pending,
        last_delivered=last,
        first_id=first_id,
        last_generated=last_generated,
        server_lag=None if server_lag is None else int(server_lag),
    )
    consumers = [
        ConsumerInfo(reply_text(c["name"]), int(c["pending"]), int(c["idle"]) / 1000)
        for c in client.xinfo_consumers(stream, group)
    ]
    return StreamStatus(
        stream, length, group, True, pending, last, lag.entries, lag.exact, last_generated, consumers
    )


def has_undelivered(client: redis.Redis, stream: str, group: str) -> bool:
    """Whether ``stream`` holds entries never delivered to ``group`` (False for no stream)."""
    status = stream_status(client, stream, group)
    return status.lag > 0


def queue_status(client: redis.Redis, name: str) -> QueueStatus:
    """Counts of one RQ queue and its registries (no cleanup: read-only)."""
    queue = Queue(name, connection=client, serializer=JSONSerializer)
    return QueueStatus(
        name=name,
        queued=queue.count,
        started=queue.started_job_registry.get_job_count(cleanup=False),
        scheduled=queue.scheduled_job_registry.get_job_count(cleanup=False),
        failed=queue.failed_job_registry.get_job_count(cleanup=False),
    )


DEFAULT_ALIVE_WITHIN_SECONDS = 15.0  # the default job lease: a worker silent this long has lost its job


def worker_liveness(client: redis.Redis, *, now: float, alive_within: float) -> tuple[int, int]:
    """(alive, silent) RQ workers: alive = a heartbeat within ``alive_within`` seconds of ``now`` (unix
    seconds). An idle worker beats about every second and a busy one every ``heartbeat_seconds``; a
    SIGKILLed one stops, but its key lives on for its TTL (two minutes), which RQ's own count includes.
    Silent: a key still there whose last beat is older. Two round trips."""
    found = Worker.all_keys(connection=client)
    if not found:
        return 0, 0
    with client.pipeline(transaction=False) as pipe:
        for key in found:
            pipe.hget(key, "last_heartbeat")
        beats = pipe.execute()
    ages = [now - utcparse(reply_text(beat)).timestamp() for beat in beats if beat is not None]
    alive = sum(1 for age in ages if age <= alive_within)
    return alive, len(ages) - alive


def pipeline_status(
    client: redis.Redis,
    *,
    streams: Sequence[str],
    group: str,
    queues: Sequence[str],
    dead_stream: str,
    alive_within: float = DEFAULT_ALIVE_WITHIN_SECONDS,
) -> PipelineStatus:
    """The whole picture for ``fixmem status`` and the metrics collector."""
    alive, silent = worker_liveness(client, now=time.time(), alive_within=alive_within)
    return PipelineStatus(
        streams=[stream_status(client, s, group) for s in streams],
        queues=[queue_status(client, q) for q in queues],
        dead_letters=int(client.xlen(dead_stream)),
        workers=alive,
        silent_workers=silent,
    )
