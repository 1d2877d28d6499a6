"""The process_batch job: decide (pure), tally (pure), and run_batch on a real Redis and real files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import redis

from ingest import keys
from ingest.batching import Accepted, StreamEntry, classify
from ingest.errors import DeadLetterReason
from store import AppendResult, FixStore, StoreUnavailable
from tests import configs
from tests.ingest.turns import turn, wire
from workers import counters, jobs
from workers.counters import read_counters
from workers.errors import NotConfigured
from workers.extraction import Limits
from workers.jobs import Decision, WorkerContext, decide, run_batch, tally


def _items(*events: dict[str, object], start: int = 1700000000000) -> list[tuple[str, bytes]]:
    return [(f"{start + i}-0", wire(e)) for i, e in enumerate(events)]


def test_decide_gives_an_entry_a_skip_or_a_dead_letter() -> None:
    items = [*_items(turn(1), turn(2, kind="no_files")), ("9-0", b"{broken")]
    fixed, skipped, dead = decide(items, enabled=True, limits=Limits(), max_bytes=1 << 20)
    assert fixed.entry is not None and fixed.entry.outcome == "fixed"
    assert (fixed.owner, fixed.project_key) == ("alice", "github.com/acme/widgets")
    assert skipped.skip == "skipped_no_files" and skipped.entry is None
    assert dead.dead is DeadLetterReason.INVALID_JSON and dead.raw == b"{broken"


def test_decide_when_disabled_skips_everything() -> None:
    [d] = decide(_items(turn(1)), enabled=False, limits=Limits(), max_bytes=1 << 20)
    assert d.skip == "skipped_disabled"


def test_an_extraction_crash_costs_one_event(monkeypatch: pytest.MonkeyPatch) -> None:
    real = jobs.extract

    def flaky(event, **kwargs):  # type: ignore[no-untyped-def]
        if event.user_message.endswith("mod2 fails"):
            raise ZeroDivisionError("bug")
        return real(event, **kwargs)

    monkeypatch.setattr(jobs, "extract", flaky)
    decisions = decide(_items(turn(1), turn(2), turn(3)), enabled=True, limits=Limits(), max_bytes=1 << 20)
    assert [d.dead for d in decisions] == [None, DeadLetterReason.PROCESSING_FAILED, None]
    assert "ZeroDivisionError" in decisions[1].error


def test_tally_counts_each_event_once() -> None:
    items = _items(turn(1), turn(1), turn(2, kind="partial"), turn(3, kind="no_files"), turn(4))
    decisions = decide(items, enabled=True, limits=Limits(), max_bytes=1 << 20)
    first, repeat, partial, _, old = decisions
    assert first.entry and repeat.entry and partial.entry and old.entry
    assert first.entry.id == repeat.entry.id  # the same turn published twice
    result = AppendResult(added=[first.entry, partial.entry], duplicates=[repeat.entry.id, old.entry.id],
                          dropped=[partial.entry], quarantined=0)  # fmt: skip
    written_at = 1700000000.0 + 5
    report = tally(decisions, [result], written_at=written_at, duration_seconds=0.1, present={old.entry.id})
    assert report.events == {"recorded": 2, "duplicate": 2, "skipped_no_files": 1}
    assert report.entries == {"fixed": 1, "partial": 1}
    assert report.rotation_dropped == {"partial": 1}
    assert report.latencies == pytest.approx((5.0, 5.0 - 0.002))
    assert report.last_entry_ts == written_at


def test_tally_latency_never_negative_under_clock_skew() -> None:
    [d] = decide(_items(turn(1), start=1800000000000), enabled=True, limits=Limits(), max_bytes=1 << 20)
    assert d.entry is not None
    result = AppendResult([d.entry], [], [], 0)
    report = tally([d], [result], written_at=1700000000.0, duration_seconds=0, present=())
    assert report.latencies == (0.0,)


def _context(client: redis.Redis, data_dir: Path, **kw: object) -> WorkerContext:
    return configs.worker_context(client, configs.fix_store(data_dir), name="w1", **kw)


def _batch(client: redis.Redis, job_id: str, items: list[tuple[str, bytes]]) -> None:
    client.hset(keys.batch(job_id), mapping={**dict(items), keys.BATCH_STREAM_FIELD: b"fixmem:turns"})


def test_run_batch_writes_entries_counts_and_marks_the_batch_done(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    items = _items(*(turn(i, kind=("fixed", "partial", "unverified", "no_files")[i % 4]) for i in range(8)))
    _batch(redis_client, "b1", [*items, ("1700000000999-0", b'{"v": 1}')])
    ctx = _context(redis_client, data_dir)
    report = run_batch(ctx, "b1")
    assert report.events == {"recorded": 6, "skipped_no_files": 2, "dead_letter": 1}
    stored = ctx.store.read("alice", "github.com/acme/widgets").entries
    assert sorted(e.outcome for e in stored) == ["fixed"] * 2 + ["partial"] * 2 + ["unverified"] * 2
    assert not redis_client.exists(keys.batch("b1"))
    fleet = read_counters(redis_client)
    assert fleet.events["recorded"] == 6 and fleet.events["dead_letter"] == 1
    assert fleet.entries == {"fixed": 2, "partial": 2, "unverified": 2}
    assert fleet.event_to_entry.count == 6
    [(_, letter)] = redis_client.xrange(keys.DEFAULT_DEAD_STREAM)
    assert letter[b"origin_stream"] == b"fixmem:turns"
    assert letter[b"consumer"] == b"w1"


def test_run_batch_again_is_a_no_op_and_republished_turns_are_duplicates(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "b1", _items(turn(1), turn(2)))
    run_batch(ctx, "b1")
    assert run_batch(ctx, "b1").events == {}  # the batch is gone: done before
    _batch(redis_client, "b2", _items(turn(1), turn(2), start=1700000001000))  # the same turns again
    assert run_batch(ctx, "b2").events == {"duplicate": 2}
    assert len(ctx.store.read("alice", "github.com/acme/widgets").entries) == 2
    [first, _] = ctx.store.read("alice", "github.com/acme/widgets").entries
    assert ctx.store.forget("alice", first.id)
    _batch(redis_client, "b3", _items(turn(1), turn(2), start=1700000002000))  # a re-run backfill
    assert run_batch(ctx, "b3").events == {"duplicate": 2}  # the forgotten one is not recorded again
    assert first.id not in {e.id for e in ctx.store.read("alice", "github.com/acme/widgets").entries}
    assert len(ctx.store.read("alice", "github.com/acme/widgets").entries) == 1


def test_a_store_failure_raises_and_keeps_the_batch(
    redis_client: redis.Redis, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _context(redis_client, data_dir)

    def full(*args: object, **kwargs: object) -> AppendResult:
        raise StoreUnavailable(data_dir, "no space left on device")

    monkeypatch.setattr(ctx.store, "append", full)
    _batch(redis_client, "b1", _items(turn(1)))
    with pytest.raises(StoreUnavailable):
        run_batch(ctx, "b1")
    waiting = set(redis_client.hkeys(keys.batch("b1"))) - {keys.BATCH_PRESENT_FIELD, keys.BATCH_IDS_FIELD}
    assert len(waiting) == 2  # the event (and its stream name) wait for the retry
    assert read_counters(redis_client).events["recorded"] == 0


def test_process_batch_needs_an_installed_context(redis_client: redis.Redis, data_dir: Path) -> None:
    jobs.install(None)
    with pytest.raises(NotConfigured, match="fixmem worker"):
        jobs.process_batch("b1")
    jobs.install(_context(redis_client, data_dir))
    try:
        _batch(redis_client, "b1", _items(turn(1)))
        assert jobs.process_batch("b1")["events"] == {"recorded": 1}
        _batch(redis_client, "b2", _items(turn(2)))  # the name stream-id batches are enqueued under
        assert jobs.process_stream_batch("b2")["events"] == {"recorded": 1}
    finally:
        jobs.install(None)


def test_decisions_are_values() -> None:
    d = Decision("1-0", b"{}", skip="skipped_no_files")
    with pytest.raises(AttributeError):
        d.skip = None  # type: ignore[misc]


def test_a_project_key_with_credentials_is_recorded_without_the_secret(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    secret_key = "https://bot:s3cretpassw0rd@github.com/acme/widgets"
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "b1", _items(turn(1, project=secret_key), turn(2, project=secret_key)))
    assert run_batch(ctx, "b1").events == {"recorded": 2}
    assert len(ctx.store.read("alice", secret_key).entries) == 2
    on_disk = b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())
    assert b"s3cretpassw0rd" not in on_disk


# -- counting across batches, attempts and runs: recorded by outcome == the lines the log gained ------


class _Killed(Exception):
    """A worker SIGKILLed at this point (the run stops; the batch hash stays for a re-run)."""


@dataclass
class _Hooked:
    """A FixStore whose ``append`` runs ``before`` / ``after`` hooks around the real one."""

    store: FixStore
    before: Callable[[], object] | None = None
    after: Callable[[], object] | None = None

    @property
    def lock_factory(self) -> Any:
        return self.store.lock_factory

    def read(self, owner: str, project_key: str) -> Any:
        return self.store.read(owner, project_key)

    def append(self, owner: str, project_key: str, entries: Any) -> AppendResult:
        if self.before is not None:
            self.before()
        result = self.store.append(owner, project_key, entries)
        if self.after is not None:
            self.after()
        return result


def _hooked(ctx: WorkerContext, **hooks: Callable[[], object]) -> WorkerContext:
    return replace(ctx, store=_Hooked(ctx.store, **hooks))  # type: ignore[arg-type]


def _kill() -> None:
    raise _Killed


def _lines_by_outcome(data_dir: Path) -> dict[str, int]:
    entries = configs.fix_store(data_dir).read("alice", "github.com/acme/widgets").entries
    return dict(Counter(e.outcome for e in entries))


def _recorded(client: redis.Redis) -> tuple[int, dict[str, int]]:
    fleet = read_counters(client)
    return fleet.events["recorded"], {k: v for k, v in fleet.entries.items() if v}


def test_a_turn_in_two_batches_at_once_is_recorded_once(redis_client: redis.Redis, data_dir: Path) -> None:
    """The [papercuts] bug: publish_many([ev, ev, ev]) split over two batches run by two workers at once
    counted recorded 2 + duplicate 1 for one line: both batches read the logs before either wrote."""
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "a", _items(turn(1)))
    _batch(redis_client, "b", _items(turn(1), turn(1), start=1700000001000))
    b = _hooked(ctx, before=lambda: run_batch(ctx, "a"))  # "a" runs whole while "b" is before its append
    assert run_batch(b, "b").events == {"duplicate": 2}
    assert _lines_by_outcome(data_dir) == {"fixed": 1}
    assert _recorded(redis_client) == (1, {"fixed": 1})
    assert read_counters(redis_client).events["duplicate"] == 2


def test_a_batch_killed_before_its_append_does_not_count_what_another_wrote(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "a", _items(turn(1), turn(2)))
    _batch(redis_client, "b", _items(turn(1), start=1700000001000))
    with pytest.raises(_Killed):
        run_batch(_hooked(ctx, before=_kill), "a")  # registered, logs read, then killed
    assert run_batch(ctx, "b").events == {"recorded": 1}
    assert run_batch(ctx, "a").events == {"recorded": 1, "duplicate": 1}  # the re-run
    assert _recorded(redis_client) == (2, _lines_by_outcome(data_dir)) == (2, {"fixed": 2})


def test_the_first_batch_to_claim_counts_the_outcome_the_log_holds(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    """Two copies of one turn that differ (a harness re-sent it after the tests ran): "b" claims the
    line "a" wrote; it counts the outcome on disk, not its own copy's."""
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "a", _items(turn(1, kind="unverified", event_id="ev-1")))
    _batch(redis_client, "b", _items(turn(1, kind="fixed", event_id="ev-1"), start=1700000001000))
    with pytest.raises(_Killed):
        run_batch(_hooked(ctx, before=_kill), "b")  # "b" read the logs before "a" wrote
    a = _hooked(ctx, after=lambda: run_batch(ctx, "b"))  # "b" re-runs between a's append and its claim
    assert run_batch(a, "a").events == {"duplicate": 1}
    assert _lines_by_outcome(data_dir) == {"unverified": 1}
    assert _recorded(redis_client) == (1, {"unverified": 1})


def test_a_batch_run_twice_at_once_is_counted_once(redis_client: redis.Redis, data_dir: Path) -> None:
    """The reaper requeues a job whose lease lapsed while its worker still ran it (a loaded machine):
    both runs append (idempotent) and both used to count."""
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "a", _items(turn(1), turn(2, kind="partial"), turn(3, kind="no_files")))
    first = _hooked(ctx, before=lambda: run_batch(ctx, "a"))  # the second run, whole, inside the first
    assert run_batch(first, "a").events == {}  # it lost: the batch was done meanwhile
    fleet = read_counters(redis_client)
    assert (
        _recorded(redis_client) == (2, {"fixed": 1, "partial": 1}) and fleet.events["skipped_no_files"] == 1
    )
    assert fleet.pipeline["jobs_done"] == 1


def test_counting_leaves_no_state_behind(redis_client: redis.Redis, data_dir: Path) -> None:
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "a", _items(turn(1), turn(2)))
    _batch(redis_client, "b", _items(turn(1), start=1700000001000))
    run_batch(_hooked(ctx, before=lambda: run_batch(ctx, "a")), "b")
    assert not redis_client.exists(keys.COUNT_INFLIGHT, keys.COUNT_OWNER, keys.batch("a"), keys.batch("b"))


def test_a_batch_touched_during_its_commit_commits_on_the_next_try(
    redis_client: redis.Redis, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _context(redis_client, data_dir)
    _batch(redis_client, "a", _items(turn(1)))
    real_record = counters.commit
    touched: list[int] = []

    def touching(pipe: Any, report: Any, *, label_cap: int) -> None:
        if not touched:  # another client writes the watched hash between the claim and EXEC, once
            touched.append(int(redis_client.hset(keys.batch("a"), "x", "1")))
        real_record(pipe, report, label_cap=label_cap)

    monkeypatch.setattr(counters, "commit", touching)
    assert run_batch(ctx, "a").events == {"recorded": 1}
    assert touched == [1]
    assert _recorded(redis_client) == (1, {"fixed": 1})
    assert read_counters(redis_client).pipeline["jobs_done"] == 1
    assert not redis_client.exists(keys.batch("a"), keys.COUNT_INFLIGHT, keys.COUNT_OWNER)


def test_an_event_the_consumer_routes_but_the_worker_refuses_is_dead_lettered_with_its_reason(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    """One validation (issue 21): the consumer checks only the address; a bad tool event is the worker's."""
    bad = wire({**turn(1), "tool_events": [{"tool": "", "output": 3}]})
    routed = classify(StreamEntry("1700000000001-0", {b"event": bad}), max_bytes=1 << 20)
    assert isinstance(routed, Accepted) and routed.raw == bad
    _batch(redis_client, "b1", [*_items(turn(2)), ("1700000000001-0", bad)])
    report = run_batch(_context(redis_client, data_dir), "b1")
    assert report.events == {"recorded": 1, "dead_letter": 1}
    [(_, letter)] = redis_client.xrange(keys.DEFAULT_DEAD_STREAM)
    assert letter[b"reason"] == DeadLetterReason.INVALID_FIELDS.value.encode()
    assert b"tool_events.0.tool" in letter[b"error"]
    assert letter[b"event"] == bad and letter[b"origin_id"] == b"1700000000001-0"
    assert read_counters(redis_client).events["dead_letter"] == 1
