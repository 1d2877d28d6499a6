"""The RQ job: ``process_batch(batch_id)`` turns one batch of turn events into fix-log entries.

The job's payload is small: the batch id. The events wait in the batch hash ``fixmem:batch:<id>``
(stream id -> raw event JSON, plus ``stream`` -> the stream they came from), written by the consumer in
the same MULTI/EXEC as the enqueue. The job:

1. reads the batch (one round trip); a batch already gone was done by an earlier run: nothing to do;
2. parses and extracts each event (``decide``, pure): an entry, a skip reason, or a dead letter;
3. appends each project's entries in one ``FixStore.append`` (idempotent by id; rotation and index
   refresh happen inside, under the project's lock);
4. in ONE MULTI/EXEC: the fleet counters of its ``BatchReport``, the dead letters, and the deletion of the
   batch hash (which marks the batch done).

A store error raises (RQ retries the job with backoff, then keeps it in the failed registry with its batch
hash intact). A crash anywhere re-runs the job: entries already written come back as duplicates of the
store, so before its first append the job saves in the batch hash which of its entry ids the logs already
held (``present``); a re-run counts the others as ``recorded`` — they were written by an attempt that died
before its counters — and the fleet counters keep matching the logs.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis

from ingest import dead_letters, keys
from ingest.batching import parse_stream_id, stream_id_seconds
from ingest.connection import text
from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.schema import DEFAULT_MAX_EVENT_BYTES, parse_event
from store import AppendResult, FixEntry, FixStore, InvalidEntry
from workers.counters import BatchReport, record
from workers.errors import NotConfigured
from workers.extraction import Limits, extract

log = logging.getLogger("fixmem.workers.jobs")


@dataclass(frozen=True)
class WorkerContext:
    """What jobs in this process use; installed once per worker process with ``install``."""

    client: redis.Redis
    store: FixStore
    dead_stream: str = keys.DEFAULT_DEAD_STREAM
    dead_stream_max_len: int = 100_000
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    enabled: bool = True  # fix_memory_enabled: False records every turn as skipped_disabled
    limits: Limits = field(default_factory=Limits)
    name: str = "worker"  # shown in dead letters this worker writes
    clock: Callable[[], float] = time.time


_context: WorkerContext | None = None


def install(context: WorkerContext | None) -> None:
    """Make ``context`` the one jobs in this process use (``None`` uninstalls it)."""
    global _context  # noqa: PLW0603 - RQ calls jobs by import path; this is their composition point
    _context = context


def installed() -> WorkerContext:
    """The installed context; raises NotConfigured when there is none."""
    if _context is None:
        raise NotConfigured("no WorkerContext installed: run jobs with `fixmem worker`")
    return _context


def process_batch(batch_id: str) -> dict[str, Any]:
    """RQ job: process batch ``batch_id`` with the installed context; returns its BatchReport as JSON."""
    return run_batch(installed(), batch_id).to_json()


# -- deciding (pure) ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """What one event becomes: an entry, a skip (result label) or a dead letter (reason + message)."""

    stream_id: str
    raw: bytes
    owner: str = ""
    project_key: str = ""
    entry: FixEntry | None = None
    skip: str | None = None
    dead: DeadLetterReason | None = None
    error: str = ""


def decide(
    items: Iterable[tuple[str, bytes]], *, enabled: bool, limits: Limits, max_bytes: int
) -> list[Decision]:
    """Parse and extract each ``(stream id, raw event)``; an exception becomes a dead letter."""
    decisions = []
    for stream_id, raw in items:
        try:
            event = parse_event(raw, max_bytes=max_bytes)
        except InvalidEvent as exc:
            decisions.append(Decision(stream_id, raw, dead=exc.reason, error=exc.message))
            continue
        try:
            extracted = extract(event, enabled=enabled, limits=limits)
        except Exception as exc:  # a bug must cost one event, not the batch
            log.exception("extraction failed on %s", stream_id)
            decisions.append(
                Decision(
                    stream_id, raw, event.owner, event.project_key,
                    dead=DeadLetterReason.PROCESSING_FAILED, error=f"extraction failed: {exc!r}"[:600],
                )
            )  # fmt: skip
            continue
        skip = extracted.skip.value if extracted.skip is not None else None
        decisions.append(Decision(stream_id, raw, event.owner, event.project_key, extracted.entry, skip))
    return decisions


def tally(
    decisions: Sequence[Decision],
    results: Sequence[AppendResult],
    *,
    written_at: float,
    duration_seconds: float,
    present: Collection[str] | None = None,
) -> BatchReport:
    """The BatchReport of a batch from its decisions and the store's answers (pure).

    Per entry id, the first event whose entry the store added is ``recorded``; the others, and all
    events of ids the store already had, are ``duplicate`` — except, given ``present`` (the ids the logs
    held before this batch's first attempt), an id the store already had but that was not present then:
    an earlier attempt of this batch wrote it and died before counting it, so it is ``recorded`` now.
    Latency = ``written_at`` - publish time.
    """
    added = {e.id: e for r in results for e in r.added}
    if present is not None:  # written by an attempt that died before its counters
        earlier = {i for r in results for i in r.duplicates if i not in present}
        added.update(
            {d.entry.id: d.entry for d in decisions if d.entry is not None and d.entry.id in earlier}
        )
    events: Counter[str] = Counter()
    entries: Counter[str] = Counter()
    latencies: list[float] = []
    claimed: set[str] = set()
    for d in decisions:
        if d.dead is not None:
            events["dead_letter"] += 1
        elif d.skip is not None:
            events[d.skip] += 1
        elif d.entry is not None and d.entry.id in added and d.entry.id not in claimed:
            claimed.add(d.entry.id)
            events["recorded"] += 1
            entries[added[d.entry.id].outcome] += 1
            latencies.append(max(0.0, written_at - stream_id_seconds(d.stream_id)))
        else:
            events["duplicate"] += 1
    dropped: Counter[str] = Counter(e.outcome for r in results for e in r.dropped)
    return BatchReport(
        events=dict(events),
        entries=dict(entries),
        rotation_dropped=dict(dropped),
        latencies=tuple(latencies),
        duration_seconds=duration_seconds,
        last_entry_ts=written_at if added else None,
        quarantined=sum(r.quarantined for r in results),
    )


# -- doing --------------------------------------------------------------------------------------------


def run_batch(ctx: WorkerContext, batch_id: str) -> BatchReport:
    """Process one batch end to end (see the module docstring); raises StoreError/RedisError to retry."""
    started = time.perf_counter()
    key = keys.batch(batch_id)
    raw: dict[bytes, bytes] = ctx.client.hgetall(key)  # type: ignore[assignment]
    if not raw:
        log.info("batch %s is already done (no events waiting)", batch_id)
        return BatchReport(duration_seconds=time.perf_counter() - started)
    origin = text(raw.pop(keys.BATCH_STREAM_FIELD, b""))
    saved = raw.pop(keys.BATCH_PRESENT_FIELD, None)
    items = sorted(((text(k), v) for k, v in raw.items()), key=lambda kv: parse_stream_id(kv[0]))
    decisions = decide(items, enabled=ctx.enabled, limits=ctx.limits, max_bytes=ctx.max_event_bytes)
    present = _present_before(ctx, key, decisions, saved)
    if present is None:
        log.info("batch %s was finished by another run meanwhile", batch_id)
        return BatchReport(duration_seconds=time.perf_counter() - started)
    decisions, results = _append(ctx, decisions)
    written_at = ctx.clock()
    report = tally(
        decisions, results, written_at=written_at, duration_seconds=time.perf_counter() - started,
        present=present,
    )  # fmt: skip
    with ctx.client.pipeline(transaction=True) as pipe:
        record(pipe, report)
        for d in decisions:
            if d.dead is not None:
                letter = _letter(ctx, d, origin, written_at)
                dead_letters.add(pipe, ctx.dead_stream, letter, max_len=ctx.dead_stream_max_len)
        pipe.delete(key)
        pipe.execute()
    return report


_SAVE_PRESENT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
"""


def _present_before(
    ctx: WorkerContext, key: str, decisions: Sequence[Decision], saved: bytes | None
) -> frozenset[str] | None:
    """The batch's entry ids the logs held before its first attempt; None when the batch is gone.

    The first attempt reads the logs (no lock: only a re-published copy of the same turn, written in
    between by another worker, could make it count that entry twice) and saves the answer in the batch
    hash, only while the hash exists; later attempts use the saved answer. Raises StoreError, RedisError.
    """
    if saved is not None:
        return frozenset(orjson.loads(saved))
    wanted: dict[tuple[str, str], set[str]] = {}
    for d in decisions:
        if d.entry is not None:
            wanted.setdefault((d.owner, d.project_key), set()).add(d.entry.id)
    if not wanted:
        return frozenset()
    present = sorted(
        entry.id
        for (owner, project_key), ids in wanted.items()
        for entry in ctx.store.read(owner, project_key).entries
        if entry.id in ids
    )
    stored = ctx.client.eval(_SAVE_PRESENT, 1, key, keys.BATCH_PRESENT_FIELD, orjson.dumps(present))
    return None if stored is None else frozenset(orjson.loads(stored))


def _append(ctx: WorkerContext, decisions: list[Decision]) -> tuple[list[Decision], list[AppendResult]]:
    """One store append per project; a project whose entries the store refuses is dead-lettered."""
    groups: dict[tuple[str, str], list[FixEntry]] = {}
    for d in decisions:
        if d.entry is not None:
            groups.setdefault((d.owner, d.project_key), []).append(d.entry)
    results: list[AppendResult] = []
    refused: dict[tuple[str, str], str] = {}
    for (owner, project_key), entries in groups.items():
        try:
            results.append(ctx.store.append(owner, project_key, entries))
        except InvalidEntry as exc:  # not transient: retrying cannot help
            log.error("store refused the entries of one project: %s", exc)
            refused[(owner, project_key)] = f"store refused the entry: {exc}"
    if refused:
        decisions = [
            Decision(
                d.stream_id, d.raw, d.owner, d.project_key,
                dead=DeadLetterReason.PROCESSING_FAILED, error=refused[(d.owner, d.project_key)],
            )
            if d.entry is not None and (d.owner, d.project_key) in refused
            else d
            for d in decisions
        ]  # fmt: skip
    return decisions, results


def _letter(ctx: WorkerContext, d: Decision, origin: str, now: float) -> dict[bytes, bytes]:
    assert d.dead is not None
    return dead_letters.fields_for(
        reason=d.dead,
        error=d.error,
        origin_stream=origin,
        origin_id=d.stream_id,
        payload=d.raw,
        consumer=ctx.name,
        now=now,
    )
