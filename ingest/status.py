"""Where the pipeline stands, read from Redis: stream length, pending and lag, queues, dead letters.

Read-only; each function is a few round trips, cheap enough for a metrics scrape. Lag (entries not yet
delivered to the group) comes from ``XINFO GROUPS`` on Redis >= 7; on 6.2 a server-side count of the
entries after the group's last delivered id, capped at ``lag_limit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import redis
from rq import Queue, Worker
from rq.serializers import JSONSerializer

from ingest.connection import text

_COUNT_AFTER = """
return #redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
"""


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
    lag: int  # entries not yet delivered to the group (a lower bound when lag_capped)
    lag_capped: bool
    consumers: list[ConsumerInfo] = field(default_factory=list)


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
    """Streams, queues, dead letters and live workers."""

    streams: list[StreamStatus]
    queues: list[QueueStatus]
    dead_letters: int
    workers: int

    def to_json(self) -> dict[str, Any]:
        """A JSON value."""
        return asdict(self)


def stream_status(client: redis.Redis, stream: str, group: str, *, lag_limit: int = 10_000) -> StreamStatus:
    """Length, pending, lag and consumers of ``stream`` for ``group``."""
    length = int(client.xlen(stream))
    try:
        groups = client.xinfo_groups(stream)
    except redis.exceptions.ResponseError:  # no such key
        groups = []
    info = next((g for g in groups if text(g["name"]) == group), None)
    if info is None:
        return StreamStatus(stream, length, group, False, 0, None, length, False)
    last = text(info["last-delivered-id"])
    capped = False
    if info.get("lag") is not None:
        lag = int(info["lag"])
    else:
        lag = int(client.eval(_COUNT_AFTER, 1, stream, last, str(lag_limit)))
        capped = lag >= lag_limit
    consumers = [
        ConsumerInfo(text(c["name"]), int(c["pending"]), int(c["idle"]) / 1000)
        for c in client.xinfo_consumers(stream, group)
    ]
    return StreamStatus(stream, length, group, True, int(info["pending"]), last, lag, capped, consumers)


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


def pipeline_status(
    client: redis.Redis,
    *,
    streams: Sequence[str],
    group: str,
    queues: Sequence[str],
    dead_stream: str,
) -> PipelineStatus:
    """The whole picture for ``fixmem status`` and the metrics collector."""
    return PipelineStatus(
        streams=[stream_status(client, s, group) for s in streams],
        queues=[queue_status(client, q) for q in queues],
        dead_letters=int(client.xlen(dead_stream)),
        workers=Worker.count(connection=client),
    )
