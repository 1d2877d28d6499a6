"""Stream trimming: drop what every consumer group has acknowledged and no job holds; enforce the hard cap.

``trim_floor`` decides (pure); ``trim_stream`` does it. The floor is the oldest id something still needs:
a group's oldest pending entry, or the entry after the last one it was given, and the oldest id an
unfinished job holds (a job's batch hash names its stream ids; the events stay in the stream until the
job is done: ``keys.held``). ``XTRIM MINID ~`` removes only whole radix-tree nodes below the floor, so it
never removes an unacknowledged entry nor one a queued, scheduled or running job holds. The group
positions are read before the holds: an entry acknowledged in between (its job enqueued and held in the
same MULTI/EXEC) was still pending when the positions were read, so one of the two keeps it.

A job that will not run unless an operator requeues it (failed, stopped, canceled, or its RQ job gone)
does not pin the stream: its events are copied into its batch hash (``copy_out``, as before ids-only
batches) and its hold dropped. The hard cap (``XTRIM MAXLEN``) is the only trim that can remove entries
something still needs, unread ones or ones a queued job holds: it is counted and logged, and a worker that
finds an id of its job gone dead-letters it (``missing_from_stream``), so no event goes unaccounted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import redis
from rq.job import Job, JobStatus

from ingest import keys
from ingest.batching import parse_stream_id, successor
from ingest.connection import entry_rows, reply_text

log = logging.getLogger("fixmem.ingest.trim")

# A job in one of these RQ states runs again without an operator; its hold keeps its events in the stream.
WILL_RUN = frozenset(
    s.value
    for s in (
        JobStatus.CREATED,
        JobStatus.QUEUED,
        JobStatus.STARTED,
        JobStatus.DEFERRED,
        JobStatus.SCHEDULED,
        JobStatus.RATE_LIMITED,
        JobStatus.READY_TO_ENQUEUE,
    )
)
COPY_OUT_LIMIT = 100  # holds copied out per stream per trim pass (the rest next pass)


@dataclass(frozen=True, slots=True)
class GroupPosition:
    """How far one consumer group got: last id delivered, and its oldest pending id (if any)."""

    name: str
    last_delivered: str
    oldest_pending: str | None


@dataclass(frozen=True, slots=True)
class TrimResult:
    """Entries removed from one stream (acknowledged by all groups and held by no job; over the hard cap),
    and the holds of jobs that will not run again whose events were copied out."""

    acked: int = 0
    over_cap: int = 0
    copied_out: int = 0


def trim_floor(groups: Sequence[GroupPosition], held: int | None = None) -> str | None:
    """The smallest id any group still needs, or the first of the ``held`` millisecond (the oldest id a
    job holds) if smaller; None when there are no groups (then nothing is trimmed)."""
    needed: list[str] = []
    for group in groups:
        if group.oldest_pending is not None:
            needed.append(group.oldest_pending)
        else:
            needed.append(successor(group.last_delivered))
    if not needed:
        return None
    if held is not None:
        needed.append(f"{held}-0")
    return min(needed, key=parse_stream_id)


def group_positions(client: redis.Redis, stream: str) -> list[GroupPosition]:
    """Every consumer group of ``stream`` with its position (two round trips per group with pending)."""
    try:
        groups = client.xinfo_groups(stream)
    except redis.exceptions.ResponseError:  # no such key
        return []
    positions = []
    for group in groups:
        name = _text(group["name"])
        oldest = None
        if int(group["pending"]):
            summary = client.xpending(stream, name)
            oldest = _text(summary["min"]) if summary.get("min") else None
        positions.append(GroupPosition(name, _text(group["last-delivered-id"]), oldest))
    return positions


def oldest_held(client: redis.Redis, stream: str) -> tuple[int | None, int]:
    """The millisecond of the oldest id of ``stream`` that a job which will run holds (None: none), and
    how many holds of jobs that will not run it copied out on the way (``copy_out``)."""
    copied = 0
    while True:
        rows = client.zrange(keys.held(stream), 0, 0, withscores=True)
        if not rows:
            return None, copied
        member, score = cast(tuple[bytes, float], rows[0])
        job_id = reply_text(member)
        status = client.hget(Job.key_for(job_id), "status")
        if (status is not None and reply_text(status) in WILL_RUN) or copied >= COPY_OUT_LIMIT:
            return int(score), copied
        if not copy_out(client, stream, job_id):
            return int(score), copied  # its batch changed meanwhile: a worker has it; look again next pass
        copied += 1


def copy_out(client: redis.Redis, stream: str, job_id: str) -> bool:
    """Copy the events job ``job_id`` holds from ``stream`` into its batch hash and drop its hold, in one
    MULTI/EXEC and only if the hash did not change meanwhile (False then). An id already gone stays empty:
    the worker dead-letters it if the job is requeued."""
    key = keys.batch(job_id)
    with client.pipeline(transaction=True) as pipe:
        pipe.watch(key)  # type: ignore[no-untyped-call]
        fields: dict[bytes, bytes] = pipe.hgetall(key)  # type: ignore[assignment]
        waiting = [reply_text(k) for k, v in fields.items() if not v]
        found: dict[str, bytes] = {}
        if waiting:
            with client.pipeline(transaction=False) as reads:
                for stream_id in waiting:
                    reads.xrange(stream, min=stream_id, max=stream_id, count=1)
                for stream_id, reply in zip(waiting, reads.execute(), strict=True):
                    rows = entry_rows(reply)
                    body = rows[0][1].get(keys.EVENT_FIELD) if rows else None
                    if body:
                        found[stream_id] = body
        pipe.multi()
        if found:
            pipe.hset(key, mapping=found)  # type: ignore[arg-type]
        pipe.zrem(keys.held(stream), job_id)
        try:
            pipe.execute()
        except redis.WatchError:
            return False
    log.info(
        "job %s will not run unless requeued: copied its %d events out of %s",
        job_id,
        len(found),
        stream,
    )
    return True


def trim_stream(client: redis.Redis, stream: str, *, max_len: int) -> TrimResult:
    """Trim what every group acknowledged and no job holds, then cut to ``max_len`` (counted and logged
    when it bites)."""
    acked = 0
    positions = group_positions(client, stream)  # before the holds (see the module docstring)
    held, copied = oldest_held(client, stream)
    floor = trim_floor(positions, held)
    if floor is not None:
        acked = int(client.xtrim(stream, minid=floor, approximate=True))
    over = 0
    length = int(client.xlen(stream))
    if length > max_len:
        over = int(client.xtrim(stream, maxlen=max_len, approximate=False))
        if over:
            client.hincrby(keys.METRICS_PIPELINE, "trimmed_over_cap", over)
            log.warning(
                "stream %s held %d entries, over the cap of %d: trimmed the %d oldest, including "
                "unacknowledged ones or ones a queued job holds (its worker dead-letters those as "
                "missing_from_stream; raise FIXMEM_STREAM_MAX_LEN or add workers)",
                stream,
                length,
                max_len,
                over,
            )
    if acked:
        client.hincrby(keys.METRICS_PIPELINE, "trimmed_acked", acked)
    if copied:
        client.hincrby(keys.METRICS_PIPELINE, "held_copied_out", copied)
    return TrimResult(acked, over, copied)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
