"""Redis clients for ingest: timeouts that never block a harness forever, and a printable address."""

from __future__ import annotations

from typing import Any

import redis

REDIS_DOWN = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.BusyLoadingError,
)


def is_out_of_memory(exc: redis.exceptions.ResponseError) -> bool:
    """Whether Redis refused a write for lack of memory (``noeviction``), alone or inside MULTI/EXEC."""
    return (
        isinstance(exc, redis.exceptions.OutOfMemoryError)
        or "maxmemory" in str(exc)
        or (isinstance(exc, redis.exceptions.ExecAbortError) and "OOM" in str(exc))
    )


def cannot_persist(exc: redis.exceptions.ResponseError) -> bool:
    """Whether Redis refused a write because it cannot save (``MISCONF``: its AOF or RDB file cannot be
    written, e.g. the disk is full), alone or inside MULTI/EXEC."""
    return "MISCONF" in str(exc)


def write_refusal(exc: redis.exceptions.ResponseError) -> str | None:
    """Why Redis refuses writes for now (a condition to wait out, not a bug), or None for other errors."""
    if is_out_of_memory(exc):
        return "out of memory (maxmemory, noeviction): add memory or workers"
    if cannot_persist(exc):
        return "it cannot write its AOF/RDB file (disk full?): free space where Redis keeps its data"
    return None


def connect(url: str, *, timeout: float = 5.0) -> redis.Redis:
    """A client for ``url`` whose connects and reads give up after ``timeout`` seconds.

    Blocking reads must block for less than ``timeout``. Raises ValueError on a malformed URL.
    """
    return redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, health_check_interval=30
    )


def describe(client: redis.Redis) -> str:
    """Where ``client`` connects, as a URL without credentials (for messages and logs)."""
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    return f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


def reply_text(value: object) -> str:
    """A reply value as text (replies are bytes: clients here do not decode responses)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def entry_rows(reply: Any) -> list[tuple[str, dict[bytes, bytes]]]:
    """``XRANGE``/``XCLAIM`` rows as ``(id, fields)``; a deleted entry has empty fields, no id is skipped."""
    return [
        (reply_text(entry_id), dict(fields or {})) for entry_id, fields in reply or () if entry_id is not None
    ]


def stream_replies(reply: Any) -> list[tuple[str, list[tuple[str, dict[bytes, bytes]]]]]:
    """``XREAD``/``XREADGROUP`` replies as ``[(stream, rows)]``, from RESP2 lists or RESP3 maps."""
    if not reply:
        return []
    items = reply.items() if isinstance(reply, dict) else reply
    out = []
    for stream, entries in items:
        rows = entries
        if isinstance(rows, list) and len(rows) == 1 and isinstance(rows[0], list):
            rows = rows[0]  # RESP3 wraps the entries once more
        out.append((reply_text(stream), entry_rows(rows)))
    return out
