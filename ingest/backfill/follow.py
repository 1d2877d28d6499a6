"""Following a backfill's turns through the pipeline, from Redis alone (the stream, RQ, the batch hashes).

A turn published to the backfill stream is, in order: unread (after the consumer group's last-delivered
id), pending (read, not yet handed to a job: ``XPENDING``), queued (a field of a ``fixmem:batch:*`` hash:
enqueued, running, or waiting for a retry), failed (its batch's job is in RQ's failed registry), or
processed (the worker deleted the batch after writing the entries). ``follow`` polls until nothing is on
its way, a deadline, or a stop. Each look reads the stages in that order, so a turn moving between them is
never counted done early. What a look sees is a ``Drain`` (``ingest.backfill.records``).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import redis
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from ingest import keys
from ingest.backfill.config import RunConfig
from ingest.backfill.records import Drain, RunResult
from ingest.batching import parse_stream_id
from ingest.connection import reply_text

PAGE = 1000  # pending entries or batch keys per round trip


class Following(Protocol):
    """What ``follow`` tells a progress display after each look."""

    def following(self, drain: Drain) -> None: ...


def consumers_reading(client: redis.Redis, stream: str, group: str) -> int:
    """How many consumers the group has on ``stream`` (0 when the stream or the group does not exist)."""
    try:
        groups = client.xinfo_groups(stream)
    except redis.exceptions.ResponseError:
        return 0
    return next((int(g["consumers"]) for g in groups if reply_text(g["name"]) == group), 0)


def last_delivered(client: redis.Redis, stream: str, group: str) -> tuple[int, int] | None:
    """The id of the last entry the group was given, or None before any consumer made the group."""
    try:
        groups = client.xinfo_groups(stream)
    except redis.exceptions.ResponseError:  # the stream does not exist yet
        return None
    for info in groups:
        if reply_text(info["name"]) == group:
            return parse_stream_id(reply_text(info["last-delivered-id"]))
    return None


class _Tracker:
    """Reads where a set of stream ids is: unread, pending, in a batch hash, or in a failed job's batch."""

    def __init__(
        self, client: redis.Redis, ids: Sequence[str], *, stream: str, group: str, queue: str
    ) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self.wanted = set(ids)
        self.ids = sorted(self.wanted, key=parse_stream_id)
        self.order = [parse_stream_id(i) for i in self.ids]
        self.failed = FailedJobRegistry(queue, connection=client, serializer=JSONSerializer)
        self.prefix = keys.batch("")

    def state(self) -> Drain:
        """One look: a few round trips, plus one per 1,000 pending entries or batch keys."""
        if not self.ids:
            return Drain(0)
        last = last_delivered(self.client, self.stream, self.group)
        read = 0 if last is None else bisect.bisect_right(self.order, last)
        pending = self._pending(self.ids[read - 1]) if read else frozenset()
        queued, failed = self._in_batches()
        return Drain(len(self.ids), frozenset(self.ids[read:]), pending - queued, queued - failed, failed)

    def _pending(self, last: str) -> frozenset[str]:
        found: set[str] = set()
        start = self.ids[0]
        while True:
            page = self.client.xpending_range(self.stream, self.group, min=start, max=last, count=PAGE)
            found.update(i for i in (reply_text(p["message_id"]) for p in page) if i in self.wanted)
            if len(page) < PAGE:
                return frozenset(found)
            ms, seq = parse_stream_id(reply_text(page[-1]["message_id"]))
            start = f"{ms}-{seq + 1}"

    def _in_batches(self) -> tuple[frozenset[str], frozenset[str]]:
        holding: dict[str, set[str]] = {}
        names = [reply_text(k) for k in self.client.scan_iter(match=keys.batch("*"), count=1000)]
        for start in range(0, len(names), PAGE):
            chunk = names[start : start + PAGE]
            with self.client.pipeline(transaction=False) as pipe:
                for name in chunk:
                    pipe.hkeys(name)
                replies = pipe.execute()
            for name, fields in zip(chunk, replies, strict=True):
                mine = {i for i in (reply_text(f) for f in fields) if i in self.wanted}
                if mine:
                    holding[name.removeprefix(self.prefix)] = mine
        if not holding:
            return frozenset(), frozenset()
        failed_jobs = set(self.failed.get_job_ids(cleanup=False))
        queued = frozenset(i for ids in holding.values() for i in ids)
        failed = frozenset(i for job, ids in holding.items() if job in failed_jobs for i in ids)
        return queued, failed


def follow(
    client: redis.Redis,
    ids: Sequence[str],
    *,
    stream: str,
    group: str,
    queue: str,
    timeout: float,
    listener: Following | None = None,
    stop: threading.Event | None = None,
    poll_seconds: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
) -> Drain:
    """Wait until the events at ``ids`` went through the pipeline, ``timeout`` seconds passed, or ``stop``.

    Returns the last state seen (``Drain.settled`` says whether it finished). Events of a failed job are
    not waited for.
    """
    stop = stop or threading.Event()
    tracker = _Tracker(client, ids, stream=stream, group=group, queue=queue)
    deadline = clock() + timeout
    while True:
        drain = tracker.state()
        if listener is not None:
            listener.following(drain)
        if drain.settled or clock() >= deadline or stop.wait(poll_seconds):
            return drain


def follow_run(
    client: redis.Redis,
    result: RunResult,
    config: RunConfig,
    *,
    timeout: float,
    announce: Callable[[str], None],
    listener: Following | None = None,
    stop: threading.Event | None = None,
) -> Drain | None:
    """``follow`` the events ``result`` has in the stream (None: nothing to wait for, or interrupted).

    ``announce`` hears, before the wait, that no consumer reads the stream yet.
    """
    if not result.sent or result.interrupted:
        return None
    if not consumers_reading(client, config.stream, config.group):
        announce(
            f"no consumer reads {config.stream} yet (is `fixmem up` running?): "
            f"waiting up to {timeout:g}s for the pipeline"
        )
    ids = [s.stream_id for s in result.sent]
    return follow(
        client, ids, stream=config.stream, group=config.group, queue=config.queue,
        timeout=timeout, listener=listener, stop=stop,
    )  # fmt: skip
