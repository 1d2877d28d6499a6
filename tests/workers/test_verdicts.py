"""Verdict events in the worker, on a real Redis and real files: applied by precedence, idempotent, held
before their turn, dropped for forgotten or rotated entries, and counted without breaking the entries
counters (they still equal the lines of the logs, by the agent's own label)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

from ingest import keys
from ingest.schema import validate_event
from store import FixEntry
from store.verdicts import agent_outcome
from tests import configs
from tests.ingest.turns import turn, verdict, wire
from workers.counters import read_counters
from workers.jobs import WorkerContext, run_batch

OWNER, PROJECT = "alice", "github.com/acme/widgets"


class _Clock:
    def __init__(self, now: float = 1_700_001_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _context(client: redis.Redis, data_dir: Path, **kw: Any) -> WorkerContext:
    store = configs.fix_store(data_dir, **kw.pop("store", {}))
    return configs.worker_context(client, store, name="w1", **kw)


_n = 0


def _run(ctx: WorkerContext, *events: dict[str, Any]) -> None:
    """One batch holding ``events``, run to its commit."""
    global _n  # unique batch ids and stream ids within the test process
    _n += 1
    items = {f"{1700000000000 + _n * 100 + i}-0": wire(e) for i, e in enumerate(events)}
    ctx.client.hset(keys.batch(f"v{_n}"), mapping={**items, keys.BATCH_STREAM_FIELD: b"fixmem:turns"})
    run_batch(ctx, f"v{_n}")


def _entry(ctx: WorkerContext, i: int = 0) -> FixEntry:
    """The entry of ``turn(i, …)`` (whatever its kind)."""
    [found] = [e for e in ctx.store.read(OWNER, PROJECT).entries if f"mod{i} " in e.task]
    return found


def _verdicts(client: redis.Redis) -> dict[str, int]:
    return dict(read_counters(client).verdicts)


def _assert_counters_equal_the_store(ctx: WorkerContext) -> None:
    fleet = read_counters(ctx.client)
    lines = Counter(agent_outcome(e) for e in ctx.store.read(OWNER, PROJECT).entries)
    dropped = Counter({k: v for k, v in fleet.rotation_dropped.items() if v})
    assert Counter({k: v for k, v in fleet.entries.items() if v}) - dropped == lines


def test_a_verdict_after_its_turn_decides_the_outcome_and_keeps_the_agents(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    ctx = _context(redis_client, data_dir)
    _run(ctx, t0 := turn(0, kind="partial"))
    _run(ctx, verdict(t0, outcome="fixed", source="ci", detail="CI run 412: 120 passed"))
    entry = _entry(ctx)
    assert (entry.outcome, entry.agent_outcome, entry.outcome_source) == ("fixed", "partial", "verdict:ci")
    assert entry.verdict == {"source": "ci", "outcome": "fixed", "ts": 1_700_000_500.0,
                             "detail": "CI run 412: 120 passed", "via": "id"}  # fmt: skip
    assert (entry.model_extra or {})["verdicts"] == [entry.verdict]  # the history holds it too
    fleet = read_counters(redis_client)
    assert fleet.events["verdict"] == 1
    assert fleet.verdicts == {"ci|fixed|applied": 1}
    assert fleet.overturns == {"ci|partial|fixed": 1}
    assert fleet.entries["partial"] == 1 and fleet.entries["fixed"] == 0  # the agent's label, as written
    _assert_counters_equal_the_store(ctx)


def test_the_same_verdict_twice_changes_the_line_once(redis_client: redis.Redis, data_dir: Path) -> None:
    ctx = _context(redis_client, data_dir)
    _run(ctx, t0 := turn(0, kind="partial"))
    _run(ctx, verdict(t0, source="benchmark"))
    log = next((data_dir / "fix_memory").rglob("*.jsonl"))
    before = log.read_bytes()
    _run(ctx, verdict(t0, source="benchmark"), verdict(t0, source="benchmark"))
    assert log.read_bytes() == before
    assert _verdicts(redis_client) == {"benchmark|fixed|applied": 3}  # counted per verdict event


def test_a_lower_source_after_a_higher_one_changes_nothing(redis_client: redis.Redis, data_dir: Path) -> None:
    ctx = _context(redis_client, data_dir)
    _run(ctx, t0 := turn(0, kind="fixed"))
    _run(ctx, verdict(t0, outcome="partial", source="review", detail="breaks the CSV export"))
    _run(ctx, verdict(t0, outcome="fixed", source="ci", ts=1_700_000_900.0))  # later, but ci < review
    entry = _entry(ctx)
    assert (entry.outcome, entry.outcome_source, entry.agent_outcome) == (
        "partial",
        "verdict:review",
        "fixed",
    )
    _run(
        ctx, verdict(t0, outcome="partial", source="revert", ts=1_700_000_100.0)
    )  # earlier, but revert rules
    assert _entry(ctx).outcome_source == "verdict:revert"
    assert _verdicts(redis_client) == {
        "review|partial|applied": 1, "ci|fixed|superseded": 1, "revert|partial|applied": 1,
    }  # fmt: skip


def test_within_a_source_the_latest_verdict_wins_whatever_the_arrival_order(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    ctx = _context(redis_client, data_dir)
    _run(ctx, t0 := turn(0, kind="unverified"))
    _run(ctx, verdict(t0, outcome="fixed", ts=1_700_000_700.0))
    _run(ctx, verdict(t0, outcome="partial", ts=1_700_000_600.0))  # an older CI run, delivered late
    assert _entry(ctx).outcome == "fixed"
    _run(ctx, verdict(t0, outcome="partial", ts=1_700_000_800.0))
    assert _entry(ctx).outcome == "partial"


def test_a_verdict_before_its_turn_is_held_then_applied(redis_client: redis.Redis, data_dir: Path) -> None:
    ctx = _context(redis_client, data_dir)
    t0 = turn(0, kind="partial")
    _run(ctx, verdict(t0, outcome="fixed", source="ci"))
    assert redis_client.hlen(keys.VERDICTS_HELD) == 1
    assert _verdicts(redis_client) == {"ci|fixed|held": 1}
    assert read_counters(redis_client).verdicts_held == 1
    _run(ctx, t0)
    entry = _entry(ctx)
    assert (entry.outcome, entry.agent_outcome) == ("fixed", "partial")
    assert not redis_client.exists(keys.VERDICTS_HELD, keys.VERDICTS_DUE)
    assert _verdicts(redis_client) == {"ci|fixed|held": 1, "ci|fixed|applied": 1}
    assert read_counters(redis_client).overturns == {"ci|partial|fixed": 1}
    _assert_counters_equal_the_store(ctx)


def test_a_held_verdict_expires_after_the_hold(redis_client: redis.Redis, data_dir: Path) -> None:
    clock = _Clock()
    ctx = _context(redis_client, data_dir, clock=clock, verdict_hold_seconds=3600.0)
    t0 = turn(0, kind="partial")
    _run(ctx, verdict(t0, source="merged"))
    clock.now += 3601
    _run(ctx, turn(5))  # any later batch expires what waited too long
    assert not redis_client.exists(keys.VERDICTS_HELD, keys.VERDICTS_DUE)
    assert _verdicts(redis_client) == {"merged|fixed|held": 1, "merged|fixed|expired": 1}
    _run(ctx, t0)
    assert _entry(ctx).outcome == "partial" and _entry(ctx).outcome_source is None


def test_a_verdict_for_a_forgotten_entry_is_counted_and_dropped(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    ctx = _context(redis_client, data_dir)
    _run(ctx, t0 := turn(0), turn(1))
    assert ctx.store.forget(OWNER, _entry(ctx).id)
    _run(ctx, verdict(t0, outcome="partial", source="revert"))
    assert _verdicts(redis_client) == {"revert|partial|dropped_forgotten": 1}
    assert not redis_client.exists(keys.VERDICTS_HELD)


def test_a_verdict_for_a_rotated_entry_is_counted_and_dropped(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    ctx = _context(redis_client, data_dir, store={"cap": 1})
    _run(ctx, t0 := turn(0, kind="unverified"))
    _run(ctx, turn(1))  # rotation drops turn 0 (unverified first)
    _run(ctx, verdict(t0))
    assert _verdicts(redis_client) == {"ci|fixed|dropped_rotated": 1}
    assert not redis_client.exists(keys.VERDICTS_HELD)


def test_rotation_drops_by_the_outcome_a_verdict_decided(redis_client: redis.Redis, data_dir: Path) -> None:
    ctx = _context(redis_client, data_dir, store={"cap": 2})
    _run(ctx, t0 := turn(0, kind="unverified"))
    _run(ctx, verdict(t0, outcome="fixed", source="ci"))  # the agent could not tell; CI says it held
    _run(ctx, turn(1, kind="fixed"))
    _run(ctx, turn(2, kind="unverified"))  # three entries, cap 2: the unverified one goes, not turn 0
    kept = [e.task for e in ctx.store.read(OWNER, PROJECT).entries]
    assert any("mod0" in t for t in kept) and not any("mod2" in t for t in kept)
    assert read_counters(redis_client).rotation_dropped["unverified"] == 1
    _assert_counters_equal_the_store(ctx)


def test_a_turn_carrying_a_verdict_keeps_its_id_and_gets_the_verdict(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    plain = turn(0, kind="partial")
    judged = {**plain, "harness_meta": {**plain["harness_meta"],
                                         "verdict": {"source": "benchmark", "outcome": "fixed"}}}  # fmt: skip
    assert validate_event(judged).event_id == validate_event(plain).event_id
    ctx = _context(redis_client, data_dir)
    _run(ctx, judged)
    entry = _entry(ctx)
    assert (entry.outcome, entry.agent_outcome, entry.outcome_source) == (
        "fixed",
        "partial",
        "verdict:benchmark",
    )
    assert entry.verdict is not None and entry.verdict["ts"] == judged["ts"]  # no ts: the turn's
    assert read_counters(redis_client).events["recorded"] == 1
    _assert_counters_equal_the_store(ctx)


def test_a_verdict_by_entry_id_and_for_another_owner(redis_client: redis.Redis, data_dir: Path) -> None:
    ctx = _context(redis_client, data_dir)
    _run(ctx, turn(0, kind="partial"))
    eid = _entry(ctx).id
    _run(ctx, verdict(entry_id=eid, owner="mallory", outcome="fixed"))  # not mallory's entry: it waits
    assert _entry(ctx).outcome == "partial"
    _run(ctx, verdict(entry_id=eid, outcome="fixed", source="review"))
    assert _entry(ctx).outcome_source == "verdict:review"


def test_an_aider_log_whose_later_run_passed_records_a_fixed_entry(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    """The [fix-content] finding, end to end: the passing ``/run pytest`` after the agent's change used to
    be dropped (no file touched) and the change stayed at the agent's own label."""
    from ingest.importers import import_file  # noqa: PLC0415

    log = Path(__file__).resolve().parents[1] / "fixtures" / "agent-logs" / "aider" / "add-test.md"
    events = import_file(log, owner=OWNER, project=PROJECT).events
    ctx = _context(redis_client, data_dir)
    _run(ctx, *(orjson.loads(e.to_wire()) for e in events))
    [judged] = [e for e in ctx.store.read(OWNER, PROJECT).entries if e.outcome_source]
    assert (judged.outcome, judged.outcome_source) == ("fixed", "verdict:ci")
    # What the agent's own runs said: its only test run came before the edit, and only runs after the
    # last edit count (the [fix-content] outcome rule), so on its own the change is unverified.
    assert judged.agent_outcome == "unverified"
    assert judged.verdict is not None and "1 passed" in judged.verdict["detail"]


def test_verdicts_past_the_per_entry_limit_are_counted_and_dropped(
    redis_client: redis.Redis, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers import verdicts  # noqa: PLC0415

    monkeypatch.setattr(verdicts, "MAX_HELD_PER_ENTRY", 1)
    ctx = _context(redis_client, data_dir)
    t0 = turn(0, kind="partial")
    _run(ctx, verdict(t0, source="ci"), verdict(t0, source="review", outcome="partial"))
    _run(ctx, verdict(t0, source="ci"))  # the same one again: known, not full
    assert _verdicts(redis_client) == {"ci|fixed|held": 2, "review|partial|dropped_full": 1}
    _run(ctx, t0)
    assert _entry(ctx).outcome_source == "verdict:ci"
