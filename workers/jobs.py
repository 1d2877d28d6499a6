"""The RQ job: ``process_batch(batch_id)`` turns one batch of turn events into fix-log entries.

The job's payload is small: the batch id. The batch hash ``fixmem:batch:<id>`` names its events (stream
id -> "", plus ``stream`` -> the stream they wait in; ``ingest.trim`` keeps them there while the job is
held in ``keys.held``), written by the consumer in the same MULTI/EXEC as the enqueue; the events are not
copied (a value that is not empty is the event itself: copied out for a failed job, or an older batch).
The job:

1. reads the batch (one round trip), then its events from the stream (one pipelined ``XRANGE`` per id);
   a batch already gone was done by an earlier run: nothing to do; an id gone from the stream (the
   length cap, an operator's ``XDEL``) becomes a dead letter ``missing_from_stream``;
2. parses and extracts each event (``decide``, pure): an entry, a skip reason, or a dead letter;
3. registers its entry ids as in flight, then saves which of them the logs already held (``present``);
4. appends each project's entries in one ``FixStore.append`` (idempotent by id; rotation and index
   refresh happen inside, under the project's lock), then turns' session records (``workers.sessions``);
5. claims the count of every id it wrote (``written_ids``) in ``fixmem:count:owner`` (HSETNX);
6. in ONE MULTI/EXEC, only if the batch hash still exists (WATCH): the fleet counters of its
   ``BatchReport`` (``counters.commit``, one step), the dead letters, the release of its in-flight ids,
   the deletion of the batch hash (the batch is done) and of its hold (``workers.batch_state``).

Counting is exact: for every project, ``recorded`` by outcome = the lines the logs gained. Three things
make a line look like a duplicate to the store, and each is told apart:

- a copy of the turn earlier in the same batch: the first event of an id is the one counted;
- an earlier attempt of this batch that died after its append, before its counters: the id was not
  ``present`` before the batch's first attempt, so the batch wrote it and counts it;
- another batch holding the same turn (a harness retried) that wrote it after this batch's ``present``
  was read: both batches see an id they "wrote"; the first to claim it in ``fixmem:count:owner`` counts
  it, the other counts a duplicate. The owner field lives while any batch that registered the id before
  reading the logs is unfinished (``fixmem:count:inflight``), so a late batch always finds it.

And a batch run twice at once (the reaper requeued a job whose lease lapsed while it still ran) commits
once: the commit WATCHes the batch hash and drops its counts when another run deleted it first.

A store error raises (RQ retries the job with backoff, then keeps it in the failed registry with its batch
hash intact).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis

from ingest import dead_letters, keys
from ingest.batching import parse_stream_id, stream_id_seconds
from ingest.connection import reply_text
from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.schema import HarnessMeta, TurnEvent, VerdictEvent, parse_any
from store import AppendResult, FixEntry, FixStore, InvalidEntry, entry_id
from store.paths import canonical_key
from store.verdicts import Verdict, agent_outcome
from workers import counters, sessions, verdicts
from workers.batch_state import claim, present_before, read_events, release
from workers.counters import BatchReport, agent_label
from workers.errors import NotConfigured
from workers.extraction import Limits, extract
from workers.locks import ProjectLocks

log = logging.getLogger("fixmem.workers.jobs")
_COMMIT_TRIES = 5  # a commit whose batch hash keeps changing (WATCH) is tried this often, then retried


@dataclass(frozen=True)
class WorkerContext:
    """What jobs in this process use; installed once per worker process with ``install``. Built from fixmem's
    settings (named alike; they hold the defaults) by ``fixmem.wiring.worker_context``."""

    client: redis.Redis
    store: FixStore
    dead_stream: str
    dead_stream_max_len: int
    max_event_bytes: int
    fix_memory_enabled: bool  # False records every turn as skipped_disabled
    verdict_hold_seconds: float  # a verdict waits this long for its turn's entry (workers.verdicts)
    metrics_label_cap: int  # harness / model label values kept in metrics; the others count as "other"
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
    """RQ job: process batch ``batch_id`` with the installed context; returns its BatchReport as JSON.

    The name consumers before stream-id batches enqueued (their hashes hold the events themselves);
    ``run_batch`` reads both forms, so their queued jobs still run."""
    return run_batch(installed(), batch_id).to_json()


def process_stream_batch(batch_id: str) -> dict[str, Any]:
    """RQ job: the same, for a batch hash naming stream ids (what the consumer enqueues now). A new name
    so that a worker older than stream-id batches fails the job (``AttributeError``, kept in RQ's failed
    registry; the trim copies a failed job's events into its hash, so a requeue after the upgrade runs it)
    instead of reading the empty values as events and dead-lettering them."""
    return run_batch(installed(), batch_id).to_json()


# -- deciding (pure) ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """What one event becomes: an entry, a skip (result label) or a dead letter (reason + message).

    ``verdicts``: a verdict event's verdict, or the one a turn carries (``harness_meta.verdict``).
    ``agent``: ``harness|model`` labels of a turn (metrics).
    """

    stream_id: str
    raw: bytes
    owner: str = ""
    project_key: str = ""
    entry: FixEntry | None = None
    skip: str | None = None
    dead: DeadLetterReason | None = None
    error: str = ""
    verdicts: tuple[Verdict, ...] = ()
    agent: str = ""
    linked: VerdictEvent | None = None  # a verdict naming no id: linked to entries in ``_settle``
    session: sessions.SessionRecord | None = None  # a turn with no entry whose session counts for impact


def decide(
    items: Iterable[tuple[str, bytes]], *, enabled: bool, limits: Limits, max_bytes: int
) -> list[Decision]:
    """Parse and extract each ``(stream id, raw event)``; an exception becomes a dead letter."""
    decisions = []
    for stream_id, raw in items:
        try:
            event = parse_any(raw, max_bytes=max_bytes)
        except InvalidEvent as exc:
            decisions.append(Decision(stream_id, raw, dead=exc.reason, error=exc.message))
            continue
        if isinstance(event, VerdictEvent):
            decisions.append(_verdict_decision(stream_id, raw, event, enabled=enabled))
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
        entry = extracted.entry
        decisions.append(
            Decision(
                stream_id, raw, event.owner, event.project_key, entry, skip,
                verdicts=_carried(event, entry), agent=_agent(event.harness_meta),
                session=None if event.harness_meta.recall is None else sessions.held(event, skip),
            )
        )  # fmt: skip
    return decisions


def _verdict_decision(stream_id: str, raw: bytes, event: VerdictEvent, *, enabled: bool) -> Decision:
    """A verdict event's decision: its verdict on the entry it names (by entry id, else by event id)."""
    if not enabled:
        return Decision(stream_id, raw, event.owner, event.project_key, skip="skipped_disabled")
    if event.link is not None:
        return Decision(stream_id, raw, event.owner, event.project_key, linked=event)
    target = event.entry_id or entry_id(event.owner, event.project_key, event.event_id)
    verdict = Verdict(target, event.source, event.outcome, event.ts, event.detail, "id")
    return Decision(stream_id, raw, event.owner, event.project_key, verdicts=(verdict,))


def _carried(event: TurnEvent, entry: FixEntry | None) -> tuple[Verdict, ...]:
    """The verdict a turn carries (``harness_meta.verdict``), on the turn's own entry."""
    carried = event.harness_meta.verdict
    if carried is None or entry is None:
        return ()
    ts = carried.ts if carried.ts is not None and carried.ts > 0 else event.ts
    return (Verdict(entry.id, carried.source, carried.outcome, ts, carried.detail, "id"),)


def _agent(meta: HarnessMeta) -> str:
    """``harness|model`` label values of a turn: the harness (with its ``agent_version`` when given)."""
    version = (meta.model_extra or {}).get("agent_version")
    harness = (
        f"{meta.harness}/{version}" if meta.harness and isinstance(version, str) and version else meta.harness
    )
    return f"{agent_label(harness)}|{agent_label(meta.model)}"


def written_ids(results: Sequence[AppendResult], present: Collection[str]) -> set[str]:
    """The entry ids this batch wrote, by any of its attempts (pure).

    What this attempt added, and what the store called a duplicate although the logs did not hold it
    before the batch's first attempt (``present``): an earlier attempt that died before its counters
    wrote it, or another batch holding the same turn did (the claim in ``run_batch`` tells them apart).
    """
    ids = {e.id for r in results for e in r.added}
    ids.update(i for r in results for i in r.duplicates if i not in present)
    return ids


def tally(
    decisions: Sequence[Decision],
    results: Sequence[AppendResult],
    *,
    written_at: float,
    duration_seconds: float,
    present: Collection[str],
    on_disk: Mapping[str, FixEntry] | None = None,
    counted_elsewhere: Collection[str] = frozenset(),
    settled: verdicts.Settled | None = None,
) -> BatchReport:
    """The BatchReport of a batch from its decisions and the store's answers (pure).

    An id of ``written_ids`` that ``counted_elsewhere`` (another batch claimed it) does not hold is
    ``recorded`` once, by the first event carrying it; every other event with an entry is ``duplicate``.
    A recorded entry's outcome is the agent's label the log holds (``store.verdicts.agent_outcome``: a
    verdict never changes it): the added entry, else ``on_disk[id]`` (the log's line, for ids an earlier
    attempt wrote), else the first event's entry (what the store wrote for it). A verdict event counts as
    ``verdict``; what came of the batch's verdicts is ``settled`` (``workers.verdicts``).
    Latency = ``written_at`` - publish time.
    """
    first = {d.entry.id: d.entry for d in reversed(decisions) if d.entry is not None}  # the first wins
    lines = {**first, **(on_disk or {}), **{e.id: e for r in results for e in r.added}}
    recorded = written_ids(results, present).difference(counted_elsewhere)
    events: Counter[str] = Counter()
    entries: Counter[str] = Counter()
    agents: Counter[str] = Counter()
    latencies: list[float] = []
    for d in decisions:
        if d.dead is not None:
            events["dead_letter"] += 1
        elif d.skip is not None:
            events[d.skip] += 1
        elif d.entry is None and (d.verdicts or d.linked is not None):
            events["verdict"] += 1
        elif d.entry is not None and d.entry.id in recorded:
            recorded.discard(d.entry.id)
            events["recorded"] += 1
            outcome = agent_outcome(lines[d.entry.id])
            entries[outcome] += 1
            agents[f"{d.agent or 'unknown|unknown'}|{outcome}"] += 1
            latencies.append(max(0.0, written_at - stream_id_seconds(d.stream_id)))
        else:
            events["duplicate"] += 1
    dropped: Counter[str] = Counter(agent_outcome(e) for r in results for e in r.dropped)
    return BatchReport(
        events=dict(events),
        entries=dict(entries),
        rotation_dropped=dict(dropped),
        latencies=tuple(latencies),
        duration_seconds=duration_seconds,
        last_entry_ts=written_at if latencies else None,
        quarantined=sum(r.quarantined for r in results),
        verdicts=dict(settled.counts) if settled else {},
        overturns=dict(settled.overturns) if settled else {},
        agents=dict(agents),
        unlinked=dict(settled.unlinked) if settled else {},
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
    origin = reply_text(raw.pop(keys.BATCH_STREAM_FIELD, b""))
    saved = raw.pop(keys.BATCH_PRESENT_FIELD, None)
    registered = raw.pop(keys.BATCH_IDS_FIELD, None) is not None
    cuts = raw.pop(keys.BATCH_RUNS_FIELD, None)
    items, missing = read_events(ctx.client, key, origin, raw, orjson.loads(cuts) if cuts else None)
    decisions = decide(
        items, enabled=ctx.fix_memory_enabled, limits=ctx.limits, max_bytes=ctx.max_event_bytes
    )
    if missing:
        decisions = sorted(
            [*decisions, *(missing_decision(i, origin) for i in missing)],
            key=lambda d: parse_stream_id(d.stream_id),
        )
    wanted = [(d.owner, d.project_key, d.entry.id) for d in decisions if d.entry is not None]
    present = present_before(ctx.client, ctx.store, key, wanted, saved, registered=registered)
    if present is None:
        return _finished_meanwhile(batch_id, started)
    decisions, results = _append(ctx, decisions)
    sessions.record(ctx.store, decisions)  # sessions whose turns made no entry, for impact
    report = _commit(ctx, _Done(batch_id, origin, started, decisions, results, present))
    return _finished_meanwhile(batch_id, started) if report is None else report


@dataclass(frozen=True, slots=True)
class _Done:
    """What a batch did before its commit: its decisions, the store's answers, the ids the logs held."""

    batch_id: str
    origin: str
    started: float  # perf_counter
    decisions: list[Decision]
    results: list[AppendResult]
    present: frozenset[str]


def _commit(ctx: WorkerContext, done: _Done) -> BatchReport | None:
    """In ONE MULTI/EXEC while the batch hash is unchanged (WATCH): the counters of its report
    (``counters.commit``), its verdicts, its dead letters and its release; None when another run finished
    the batch first. Raises WatchError when the hash keeps changing (the job is retried)."""
    key, results, present = keys.batch(done.batch_id), done.results, done.present
    settled = _settle(ctx, done.decisions)
    rotated = sorted({e.id for r in results for e in r.dropped})
    earlier = written_ids(results, present).difference(e.id for r in results for e in r.added)
    on_disk = _lines(ctx, done.decisions, earlier) if earlier else {}
    for _ in range(_COMMIT_TRIES):
        with ctx.client.pipeline(transaction=True) as pipe:
            pipe.watch(key)  # type: ignore[no-untyped-call]  # a run that commits first deletes it
            owners = claim(pipe, key, done.batch_id, written_ids(results, present))
            if owners is None:
                return None
            written_at = ctx.clock()
            elsewhere = {i for i, owner in owners.items() if owner != done.batch_id}
            report = tally(
                done.decisions, results, written_at=written_at,
                duration_seconds=time.perf_counter() - done.started, present=present, on_disk=on_disk,
                counted_elsewhere=elsewhere, settled=settled,
            )  # fmt: skip
            pipe.multi()
            counters.commit(pipe, report, label_cap=ctx.metrics_label_cap)
            verdicts.record(
                pipe, settled, rotated=rotated, now=written_at, hold_seconds=ctx.verdict_hold_seconds
            )
            for d in done.decisions:
                if d.dead is not None:
                    letter = _letter(ctx, d, done.origin, written_at)
                    dead_letters.add(pipe, ctx.dead_stream, letter, max_len=ctx.dead_stream_max_len)
            release(pipe, key, done.batch_id, done.origin)
            try:
                pipe.execute()
            except redis.WatchError:
                continue  # the hash changed: gone (the claim says so next time) or touched, then retry
            return report
    raise redis.WatchError(f"batch {done.batch_id} kept changing during its commit; the job is retried")


def missing_decision(stream_id: str, origin: str) -> Decision:
    """A dead letter for an id of the batch that its stream no longer holds (pure)."""
    return Decision(
        stream_id,
        b"",
        dead=DeadLetterReason.MISSING_FROM_STREAM,
        error=(
            f"entry {stream_id} was gone from {origin or 'its stream'} when its job ran: trimmed over "
            "FIXMEM_STREAM_MAX_LEN or deleted (XDEL/XTRIM) before a worker read it"
        ),
    )


def _finished_meanwhile(batch_id: str, started: float) -> BatchReport:
    log.info("batch %s was finished by another run meanwhile", batch_id)
    return BatchReport(duration_seconds=time.perf_counter() - started)


def _lines(ctx: WorkerContext, decisions: Sequence[Decision], ids: Collection[str]) -> dict[str, FixEntry]:
    """The logs' lines of ``ids`` (written by an earlier attempt or another batch), by id."""
    projects = {(d.owner, d.project_key) for d in decisions if d.entry is not None and d.entry.id in ids}
    return {e.id: e for o, p in projects for e in ctx.store.read(o, p).entries if e.id in ids}


def _append(ctx: WorkerContext, decisions: list[Decision]) -> tuple[list[Decision], list[AppendResult]]:
    """One store append per project, the projects' locks taken together when the store's locks are
    Redis leases (``ProjectLocks.holding``); a project whose entries the store refuses is dead-lettered."""
    groups: dict[tuple[str, str], list[FixEntry]] = {}
    for d in decisions:
        if d.entry is not None:
            groups.setdefault((d.owner, d.project_key), []).append(d.entry)
    results: list[AppendResult] = []
    refused: dict[tuple[str, str], str] = {}
    locks = ctx.store.lock_factory
    together = (
        locks.holding((owner, canonical_key(project)) for owner, project in groups)
        if isinstance(locks, ProjectLocks)
        else nullcontext(False)
    )
    with together:
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


def _settle(ctx: WorkerContext, decisions: Sequence[Decision]) -> verdicts.Settled:
    """Apply the batch's verdicts, its link verdicts and those held for its entries (``workers.verdicts``)."""
    return verdicts.settle_batch(
        ctx.client, ctx.store,
        [verdicts.Pending(d.owner, d.project_key, v) for d in decisions if not d.dead for v in d.verdicts],
        [d.linked for d in decisions if d.linked is not None],
        {d.entry.id for d in decisions if d.entry is not None},
        now=ctx.clock(), hold_seconds=ctx.verdict_hold_seconds,
    )  # fmt: skip


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
