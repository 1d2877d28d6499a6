"""The dead-letter stream: refused events with their reason, error, origin and full payload.

Writing (``add``) goes into the caller's pipeline, next to the acknowledgement, and counts the dead
letter by reason. Reading, replaying and purging back ``fixmem dead-letters list|show|replay|purge``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.client import Pipeline

from ingest import keys
from ingest.connection import entry_rows
from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.publish import encode_event
from ingest.schema import DEFAULT_MAX_EVENT_BYTES

PAGE = 500  # entries per round trip when walking the whole stream


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead letter as stored: where the event came from, why it was refused, and the event."""

    id: str  # id in the dead-letter stream
    reason: str
    error: str
    origin_stream: str
    origin_id: str
    payload: bytes | None
    consumer: str = ""
    deliveries: int | None = None
    dead_at: float | None = None  # unix seconds

    def summary(self) -> dict[str, Any]:
        """A JSON-able view without the payload (its size instead)."""
        return {
            "id": self.id,
            "reason": self.reason,
            "error": self.error,
            "origin_stream": self.origin_stream,
            "origin_id": self.origin_id,
            "payload_bytes": None if self.payload is None else len(self.payload),
            "consumer": self.consumer,
            "deliveries": self.deliveries,
            "dead_at": self.dead_at,
        }


@dataclass
class ReplayResult:
    """What ``replay`` did: ids re-published, ids left because still invalid or without payload."""

    replayed: list[str] = field(default_factory=list)
    still_invalid: dict[str, str] = field(default_factory=dict)
    no_payload: list[str] = field(default_factory=list)


def fields_for(
    *,
    reason: DeadLetterReason,
    error: str,
    origin_stream: str,
    origin_id: str,
    payload: bytes | None,
    consumer: str,
    now: float,
    deliveries: int | None = None,
) -> dict[bytes, bytes]:
    """The stream fields of one dead letter (pure)."""
    fields = {
        b"reason": reason.value.encode(),
        b"error": error.encode("utf-8", "replace"),
        b"origin_stream": origin_stream.encode(),
        b"origin_id": origin_id.encode(),
        b"consumer": consumer.encode("utf-8", "replace"),
        b"dead_at": repr(now).encode(),
    }
    if payload is not None:
        fields[keys.EVENT_FIELD] = payload
    if deliveries is not None:
        fields[b"deliveries"] = str(deliveries).encode()
    return fields


def add(pipe: Pipeline, stream: str, fields: Mapping[bytes, bytes], *, max_len: int) -> None:
    """Queue the dead letter and its counters on ``pipe`` (the caller executes it)."""
    pipe.xadd(stream, dict[Any, Any](fields), maxlen=max_len, approximate=True)
    reason = fields[b"reason"].decode()
    pipe.hincrby(keys.METRICS_DEAD_LETTERS, reason, 1)
    pipe.hincrby(keys.METRICS_EVENTS, "dead_letter", 1)


def _decode(entry_id: str, fields: Mapping[bytes, bytes]) -> DeadLetter:
    def field_text(name: bytes) -> str:
        value = fields.get(name)
        return "" if value is None else value.decode("utf-8", "replace")

    deliveries = fields.get(b"deliveries")
    dead_at = fields.get(b"dead_at")
    return DeadLetter(
        id=entry_id,
        reason=field_text(b"reason"),
        error=field_text(b"error"),
        origin_stream=field_text(b"origin_stream"),
        origin_id=field_text(b"origin_id"),
        payload=fields.get(keys.EVENT_FIELD),
        consumer=field_text(b"consumer"),
        deliveries=int(deliveries) if deliveries else None,
        dead_at=float(dead_at) if dead_at else None,
    )


def list_letters(
    client: redis.Redis, stream: str, *, count: int = 50, after: str = "-", reason: str | None = None
) -> list[DeadLetter]:
    """Up to ``count`` dead letters from the oldest (or after id ``after``), optionally of one reason."""
    found: list[DeadLetter] = []
    for letter in iter_letters(client, stream, after=after):
        if reason is None or letter.reason == reason:
            found.append(letter)
            if len(found) >= count:
                break
    return found


def iter_letters(client: redis.Redis, stream: str, *, after: str = "-") -> Iterator[DeadLetter]:
    """Every dead letter (after id ``after``), oldest first, a page at a time."""
    start = after if after == "-" else f"({after}"
    while True:
        rows = entry_rows(client.xrange(stream, min=start, max="+", count=PAGE))
        if not rows:
            return
        for entry_id, fields in rows:
            yield _decode(entry_id, fields)
        start = f"({rows[-1][0]}"


def get_letter(client: redis.Redis, stream: str, letter_id: str) -> DeadLetter | None:
    """One dead letter by id, or None."""
    rows = entry_rows(client.xrange(stream, min=letter_id, max=letter_id, count=1))
    return _decode(*rows[0]) if rows else None


def replay(
    client: redis.Redis,
    stream: str,
    letters: Iterable[DeadLetter],
    *,
    target: str | None = None,
    validate: bool = True,
    max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> ReplayResult:
    """Re-publish dead letters to their origin stream (or ``target``) and remove them from ``stream``.

    With ``validate`` (the default), each payload goes through ``encode_event``, as ``fixmem publish``
    does: a ``too_large`` turn is fitted under ``max_bytes`` (its longest outputs cut in the middle, the cut
    listed in ``harness_meta.cut``), and a payload that still does not parse stays in the dead-letter stream,
    reported with its current error. Each letter moves in one MULTI/EXEC (publish + delete).
    """
    result = ReplayResult()
    for letter in letters:
        if letter.payload is None:
            result.no_payload.append(letter.id)
            continue
        wire = letter.payload
        if validate:
            try:
                wire = encode_event(letter.payload, max_bytes=max_bytes)
            except InvalidEvent as exc:
                result.still_invalid[letter.id] = str(exc)
                continue
        with client.pipeline(transaction=True) as pipe:
            pipe.xadd(target or letter.origin_stream or keys.DEFAULT_STREAM, {keys.EVENT_FIELD: wire})
            pipe.xdel(stream, letter.id)
            pipe.execute()
        result.replayed.append(letter.id)
    return result


def purge(client: redis.Redis, stream: str, ids: Iterable[str] | None = None) -> int:
    """Delete the given dead letters, or all of them when ``ids`` is None; returns how many went."""
    if ids is None:
        removed = int(client.xlen(stream))
        client.delete(stream)
        return removed
    wanted = list(ids)
    return int(client.xdel(stream, *wanted)) if wanted else 0
