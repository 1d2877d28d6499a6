"""Claiming entries left pending on a consumer that stopped (``ingest.consumer.Consumer.reclaim``)."""

from __future__ import annotations

from typing import Any, cast

import redis

from ingest.batching import StreamEntry, parse_stream_id
from ingest.connection import entry_rows, reply_text
from ingest.consumer_config import ConsumerConfig


def claim_page(
    client: redis.Redis, config: ConsumerConfig, stream: str, *, own: bool
) -> tuple[list[StreamEntry], dict[str, int]]:
    """Claim one page (``read_count``) of the entries of ``stream`` pending too long on any consumer
    (``own``: this consumer's, at once); returns them in stream order (an entry gone from the stream has
    no fields) and each one's delivery count. XPENDING reports delivery counts, then XCLAIM with
    RETRYCOUNT = count + 1, so a delivery count grows with every attempt and poison entries reach the
    dead-letter stream."""
    idle_ms = 0 if own else int(config.claim_idle_seconds * 1000)
    try:
        pending = client.xpending_range(
            stream,
            config.group,
            min="-",
            max="+",
            count=config.read_count,
            consumername=config.consumer if own else None,
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
    with client.pipeline(transaction=False) as pipe:
        for retrycount, ids in by_count.items():
            pipe.xclaim(
                stream, config.group, config.consumer, idle_ms, ids,
                retrycount=retrycount, justid=True,
            )  # fmt: skip
        claimed = [reply_text(i) for batch in pipe.execute() for i in batch]
    if not claimed:
        return [], {}
    deliveries = {i: n for n, ids in by_count.items() for i in ids}
    with client.pipeline(transaction=False) as pipe:
        for entry_id in claimed:
            pipe.xrange(stream, min=entry_id, max=entry_id, count=1)
        found = pipe.execute()
    entries = []
    for entry_id, reply in zip(claimed, found, strict=True):
        rows = entry_rows(reply)
        entries.append(StreamEntry(entry_id, rows[0][1] if rows else {}))
    entries.sort(key=lambda e: parse_stream_id(e.stream_id))
    return entries, {e.stream_id: deliveries[e.stream_id] for e in entries}
