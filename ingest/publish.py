"""The publisher SDK harnesses call: validate a turn event, then ``XADD`` it to the stream.

Anything that can ``XADD`` can publish (``redis-cli XADD fixmem:turns '*' event '{…}'``); this SDK adds
validation before sending, one pipelined round trip for many events, and errors that say what to do.
Use ``connect(url)`` for a client with socket timeouts, so a dead Redis never blocks the harness.
A harness that can run ``git`` in the workspace can make the turn's file list exact: ``snapshot(ws)`` at
turn start, then ``with_changed_files(event, before)`` at turn end sets ``harness_meta.changed_files``
(``ingest.changed_files``; extraction takes that list as the truth).
An event given as a mapping without a ``project_key`` gets ``project_key_for(workspace)``: the
workspace's origin remote (``github.com/acme/widgets``), else its absolute path.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ingest import keys
from ingest.changed_files import TreeSnapshot, changed_files, snapshot
from ingest.connection import REDIS_DOWN, describe
from ingest.connection import connect as _connect
from ingest.errors import DeadLetterReason, InvalidEvent, PublishError
from ingest.fit import WIRE_HEADROOM_BYTES, fit_body
from ingest.project_key import project_key_for
from ingest.schema import (
    DEFAULT_MAX_EVENT_BYTES,
    KIND_VERDICT,
    WIRE_VERSION,
    TurnEvent,
    VerdictEvent,
    parse_any,
    validate_any,
    validate_event,
)
from ingest.spool import Spool

EventLike = TurnEvent | VerdictEvent | Mapping[str, Any] | bytes | str

__all__ = [
    "CHUNK",
    "EventLike",
    "Spool",
    "TreeSnapshot",
    "changed_files",
    "connect",
    "encode_event",
    "publish_many",
    "publish_turn",
    "publish_verdict",
    "snapshot",
    "with_changed_files",
]

CHUNK = 10_000  # events per pipeline round trip in publish_many
FIRST_BACKOFF_SECONDS = 0.05  # then doubled per retry, at most MAX_BACKOFF_SECONDS
MAX_BACKOFF_SECONDS = 1.0
_sleep = time.sleep  # the one wait of the SDK: between retries (tests watch it)


def connect(url: str, *, timeout: float = 5.0) -> redis.Redis:
    """A client for ``url`` whose connects and reads give up after ``timeout`` seconds, and that does not
    retry by itself: ``publish_turn``/``publish_many`` retry within ``timeout`` (redis-py's own retries
    back off for seconds whatever the timeout). Raises ValueError on a malformed URL."""
    client = _connect(url, timeout=timeout)
    client.connection_pool.connection_kwargs["retry"] = Retry(NoBackoff(), 0)
    return client


def with_changed_files(
    event: Mapping[str, Any], before: TreeSnapshot | None, *, after: TreeSnapshot | None = None
) -> dict[str, Any]:
    """A copy of ``event`` whose ``harness_meta.changed_files`` lists what changed in its workspace since
    ``before`` (``snapshot(workspace)`` taken at turn start; ``after`` defaults to a snapshot taken now).

    The event is returned as given (copied) when git cannot tell (either snapshot is ``None``: no
    repository, too slow, too many files), when it has no ``workspace``, or when it already carries a list.
    Never raises for git's sake."""
    body = dict(event)
    meta = dict(body.get("harness_meta") or {})
    workspace = body.get("workspace")
    if meta.get("changed_files") is not None or not isinstance(workspace, str) or not workspace.strip():
        return body
    listed = changed_files(before, after if after is not None else snapshot(workspace))
    if listed is not None:
        meta["changed_files"] = listed
        body["harness_meta"] = meta
    return body


def _timeout_of(client: redis.Redis) -> float:
    value = client.connection_pool.connection_kwargs.get("socket_timeout")
    return float(value) if isinstance(value, int | float) and value > 0 else 5.0


def encode_event(event: EventLike, *, max_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> bytes:
    """The wire bytes of ``event`` after validating it.

    Bytes and text are validated and sent as given; models and mappings are validated and encoded (a
    mapping with a ``workspace`` and no ``project_key`` is keyed by ``project_key_for(workspace)``).
    An event over ``max_bytes`` (a 5 MB test log in one output) is fitted instead of refused: the middle
    of its longest strings is cut (tool outputs first, head and tail kept, the cut marked in the text and
    listed in ``harness_meta.cut``: ``ingest.fit``), to ``WIRE_HEADROOM_BYTES`` (at most a quarter of it)
    under the limit.
    Raises InvalidEvent (with a reason code) when the event is not a valid v1 event, or is too large even
    after cutting.
    """
    if isinstance(event, bytes | str):
        data = event.encode("utf-8", "surrogatepass") if isinstance(event, str) else event
        if len(data) <= max_bytes:
            parse_any(data, max_bytes=max_bytes)
            return data
        try:
            decoded = orjson.loads(data)
        except orjson.JSONDecodeError:
            decoded = None
        if not isinstance(decoded, dict) or decoded.get("kind") == KIND_VERDICT:
            parse_any(data, max_bytes=max_bytes)  # raises the too_large refusal with its message
        return _fitted(validate_event(decoded), max_bytes)
    if isinstance(event, VerdictEvent) or (isinstance(event, Mapping) and event.get("kind") == KIND_VERDICT):
        verdict = event if isinstance(event, VerdictEvent) else validate_any(dict(event))
        wire = verdict.to_wire()
        if len(wire) > max_bytes:
            parse_any(wire, max_bytes=max_bytes)  # raises the too_large refusal with its message
        return wire
    if isinstance(event, TurnEvent):
        model = event
    else:
        body = dict(event)
        if (
            not body.get("project_key")
            and isinstance(body.get("workspace"), str)
            and body["workspace"].strip()
        ):
            body["project_key"] = project_key_for(body["workspace"])
        model = validate_event(body)
    wire = model.to_wire()
    return wire if len(wire) <= max_bytes else _fitted(model, max_bytes)


def _fitted(model: TurnEvent, max_bytes: int) -> bytes:
    """The wire form of ``model`` cut to fit ``max_bytes`` (less the headroom); InvalidEvent too_large
    when nothing cuttable is large enough (a huge user message is cut too; tool events dropped last)."""
    headroom = min(WIRE_HEADROOM_BYTES, max_bytes // 4)  # a small limit (tests, tight configs) keeps room
    fitted = fit_body(model.model_dump(mode="json"), max_bytes - headroom, validate_event)
    if fitted is None:
        size = len(model.to_wire())
        raise InvalidEvent(
            DeadLetterReason.TOO_LARGE,
            f"event is {size} bytes, over the limit of {max_bytes}, and cutting its strings cannot make it "
            "fit",
        )
    return fitted.to_wire()


def publish_turn(
    client: redis.Redis,
    event: EventLike,
    *,
    stream: str = keys.DEFAULT_STREAM,
    max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    retry_seconds: float | None = None,
    spool: Spool | None = None,
) -> str:
    """Validate and publish one turn; returns its stream id.

    Raises InvalidEvent when the event is refused, PublishError when Redis does not take it (after
    retrying, see ``publish_many``).
    """
    return publish_many(
        client, [event], stream=stream, max_bytes=max_bytes, retry_seconds=retry_seconds, spool=spool
    )[0]


def publish_many(
    client: redis.Redis,
    events: Iterable[EventLike],
    *,
    stream: str = keys.DEFAULT_STREAM,
    max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    retry_seconds: float | None = None,
    spool: Spool | None = None,
) -> list[str]:
    """Validate all events, then publish them in one pipelined round trip (per 10,000); returns ids.

    Nothing is sent unless every event is valid. While Redis does not answer (down, restarting, loading
    its AOF) the round trip is retried with backoff (50 ms doubling to 1 s) as long as the next try starts
    within ``retry_seconds`` of the call (default: the client's socket timeout, so the call blocks about
    as long as one timed-out request at most). Raises InvalidEvent naming the first bad event's position,
    PublishError when Redis still does not take them, or refuses them (out of memory, disk full: not
    retried). Then none of that round trip was acked to you: publishing again is safe, the pipeline
    records each turn once (the same holds for a retry here).

    ``spool`` (``ingest.spool.Spool``): instead of raising PublishError when Redis does not answer, keep
    the events on disk and return ``""`` as their ids; each later call first sends what is spooled (once
    Redis answers), oldest first. Refusals still raise.
    """
    deadline = time.monotonic() + (_timeout_of(client) if retry_seconds is None else retry_seconds)
    wires: list[bytes] = []
    for index, event in enumerate(events):
        try:
            wires.append(encode_event(event, max_bytes=max_bytes))
        except InvalidEvent as exc:
            raise InvalidEvent(exc.reason, f"event #{index}: {exc.message}") from exc
    ids: list[str] = []
    if spool is not None and spool.pending():
        with contextlib.suppress(PublishError):  # still down: the new events are spooled behind them
            spool.drain(lambda s, w: _xadd_retrying(client, s, w, deadline))
    for start in range(0, len(wires), CHUNK):
        chunk = wires[start : start + CHUNK]
        try:
            ids.extend(_xadd_retrying(client, stream, chunk, deadline))
        except _RedisDown:
            if spool is None:
                raise
            spool.put(stream, chunk)
            ids.extend("" for _ in chunk)
    return ids


def publish_verdict(
    client: redis.Redis,
    *,
    owner: str,
    project_key: str,
    outcome: str,
    source: str,
    event_id: str = "",
    entry_id: str = "",
    detail: str = "",
    ts: float | None = None,
    stream: str = keys.DEFAULT_STREAM,
    retry_seconds: float | None = None,
    link: Mapping[str, Any] | None = None,
) -> str:
    """Publish a verdict on a recorded turn (named by its ``event_id`` or its entry's ``entry_id``, or by a
    ``link``: commit, session, files, tests, hunks; ``ingest.links.VerdictLink``); returns its stream id.

    ``outcome``: ``fixed`` (the fix held), ``partial`` (it did not) or ``unverified``; ``source``: ``ci``,
    ``benchmark``, ``review``, ``revert`` or ``merged`` (precedence revert > review > ci > benchmark >
    merged > the agent's own tests). ``ts``: when the verdict was reached, unix seconds (default: now);
    within a source the latest wins. Publishing it again is harmless (the worker applies it once).
    Raises InvalidEvent when a field is refused, PublishError as ``publish_many``.
    """
    body = {
        "v": WIRE_VERSION,
        "kind": KIND_VERDICT,
        "event_id": event_id,
        "entry_id": entry_id,
        "ts": time.time() if ts is None else ts,
        "owner": owner,
        "project_key": project_key,
        "outcome": outcome,
        "source": source,
        "detail": detail,
    }
    if link is not None:
        body["link"] = dict(link)
    return publish_many(client, [body], stream=stream, retry_seconds=retry_seconds)[0]


class _RedisDown(PublishError):
    """Redis did not answer within the retry budget (a refusal is a plain PublishError)."""


def _xadd_retrying(client: redis.Redis, stream: str, wires: Sequence[bytes], deadline: float) -> list[str]:
    """``_xadd_all``, tried again with backoff while Redis does not answer and the deadline allows."""
    delay, tries, started = FIRST_BACKOFF_SECONDS, 1, time.monotonic()
    while True:
        try:
            return _xadd_all(client, stream, wires)
        except REDIS_DOWN as exc:
            if time.monotonic() + delay > deadline:
                raise _RedisDown(
                    f"could not publish to {describe(client)} ({exc}; {tries} tries in "
                    f"{time.monotonic() - started:.1f} s): is Redis running?"
                ) from exc
        _sleep(delay)
        delay, tries = min(delay * 2, MAX_BACKOFF_SECONDS), tries + 1


def _xadd_all(client: redis.Redis, stream: str, wires: Sequence[bytes]) -> list[str]:
    """One pipelined round trip; raises REDIS_DOWN errors as they are (to retry), PublishError else."""
    try:
        with client.pipeline(transaction=False) as pipe:
            for wire in wires:
                pipe.xadd(stream, {keys.EVENT_FIELD: wire})
            results = pipe.execute()
    except REDIS_DOWN:
        raise
    except redis.exceptions.ResponseError as exc:
        raise PublishError(_explain_refusal(exc, stream)) from exc
    except redis.exceptions.RedisError as exc:
        raise PublishError(f"could not publish to {describe(client)} ({exc}): is Redis running?") from exc
    return [r.decode() if isinstance(r, bytes) else str(r) for r in results]


def _explain_refusal(exc: redis.exceptions.ResponseError, stream: str) -> str:
    text = str(exc)
    if isinstance(exc, redis.exceptions.OutOfMemoryError) or "maxmemory" in text:
        return (
            "Redis refused the event: out of memory (maxmemory reached with noeviction). "
            "The pipeline is behind or stopped: check `fixmem status`."
        )
    if "MISCONF" in text:
        return (
            "Redis refused the event: it cannot write its AOF/RDB file (disk full?). Free space where "
            "Redis keeps its data, then publish again."
        )
    if "WRONGTYPE" in text:
        return f"Redis key {stream!r} exists and is not a stream: choose another FIXMEM_STREAM"
    return f"Redis refused the event: {text}"
