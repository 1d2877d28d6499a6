"""Stream trimming: drop what every consumer group has acknowledged, and enforce the hard length cap.

``trim_floor`` decides (pure); ``trim_stream`` does it. The floor is the oldest id some group still
needs: its oldest pending entry, or the entry after the last one it was given. ``XTRIM MINID ~`` removes
only whole radix-tree nodes below the floor, so it never removes an unacknowledged entry. The hard cap
(``XTRIM MAXLEN``) is the only trim that can lose unacknowledged entries; it is counted and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from ingest import keys
from ingest.batching import parse_stream_id, successor

log = logging.getLogger("fixmem.ingest.trim")


@dataclass(frozen=True, slots=True)
class GroupPosition:
    """How far one consumer group got: last id delivered, and its oldest pending id (if any)."""

    name: str
    last_delivered: str
    oldest_pending: str | None


@dataclass(frozen=True, slots=True)
class TrimResult:
    """Entries removed from one stream: acknowledged by all groups, and over the hard cap."""

    acked: int = 0
    over_cap: int = 0


def trim_floor(groups: Sequence[GroupPosition]) -> str | None:
    """The smallest id any group still needs; None when there are no groups (then nothing is trimmed)."""
    needed: list[str] = []
    for group in groups:
        if group.oldest_pending is not None:
            needed.append(group.oldest_pending)
        else:
            needed.append(successor(group.last_delivered))
    if not needed:
        return None
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


def trim_stream(client: redis.Redis, stream: str, *, max_len: int) -> TrimResult:
    """Trim what every group acknowledged, then cut to ``max_len`` (counted and logged when it bites)."""
    acked = 0
    floor = trim_floor(group_positions(client, stream))
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
                "unacknowledged ones (raise FIXMEM_STREAM_MAX_LEN or add workers)",
                stream,
                length,
                max_len,
                over,
            )
    if acked:
        client.hincrby(keys.METRICS_PIPELINE, "trimmed_acked", acked)
    return TrimResult(acked, over)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
