"""The claimed and verified counts the API exports: after verdicts that replace each other, rotation and
``forget`` run by the real worker and store on a real Redis, they equal a recount of the logs' lines;
read at most once per ttl; absent (never a failed scrape) when the store cannot be read."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import redis
from prometheus_client import CollectorRegistry

from fixmem import service
from fixmem.runtime.verified_metrics import VerifiedCollector, verified_families
from ingest import keys
from store.entry import OUTCOMES
from store.summary import LogSummary
from tests import configs
from tests.ingest.turns import turn, verdict, wire
from workers.jobs import WorkerContext, run_batch

OWNER = "alice"
_n = 0


def _run(ctx: WorkerContext, *events: dict[str, Any]) -> None:
    global _n  # unique batch ids within the test process
    _n += 1
    items = {f"{1700000000000 + _n * 100 + i}-0": wire(e) for i, e in enumerate(events)}
    ctx.client.hset(keys.batch(f"m{_n}"), mapping={**items, keys.BATCH_STREAM_FIELD: b"fixmem:turns"})
    run_batch(ctx, f"m{_n}")


def _exported(registry: CollectorRegistry, name: str) -> dict[str, float]:
    return {o: registry.get_sample_value(name, {"outcome": o}) or 0.0 for o in OUTCOMES}


def _recount(data_dir: Path) -> tuple[Counter[str], Counter[str]]:
    """Claimed and verified outcomes counted from every log's lines as JSON, without fixmem's code."""
    claimed: Counter[str] = Counter()
    verified: Counter[str] = Counter()
    for log in (data_dir / "fix_memory").rglob("*.jsonl"):
        for line in log.read_bytes().splitlines():
            row = orjson.loads(line)
            claimed[row.get("agent_outcome") or row["outcome"]] += 1
            if isinstance(row.get("verdict"), dict):
                verified[row["outcome"]] += 1
    return claimed, verified


def _assert_exported_equal_the_logs(ctx: WorkerContext, data_dir: Path) -> dict[str, float]:
    registry = CollectorRegistry()
    registry.register(VerifiedCollector(lambda: service.fleet_summaries(ctx.store, [OWNER])))
    claimed, verified = _recount(data_dir)
    stored, judged = (
        _exported(registry, "fixmem_stored_entries"),
        _exported(registry, "fixmem_verified_entries"),
    )
    assert stored == {o: float(claimed[o]) for o in OUTCOMES}
    assert judged == {o: float(verified[o]) for o in OUTCOMES}
    total = sum(stored.values())
    return {
        "coverage": sum(judged.values()) / total,
        "verified_fixed": judged["fixed"] / sum(judged.values()),
    }


def test_after_verdicts_overrides_rotation_and_forget_the_exported_counts_are_the_logs(
    redis_client: redis.Redis, data_dir: Path
) -> None:
    store = configs.fix_store(data_dir, cap=4)
    ctx = configs.worker_context(redis_client, store, name="w1")
    turns = [turn(i, kind="fixed" if i % 2 else "partial", ts=1_700_000_000.0 + i) for i in range(4)]
    _run(ctx, *turns)
    _run(ctx, verdict(turns[0], outcome="fixed", source="merged"), verdict(turns[1], source="ci"))
    assert _assert_exported_equal_the_logs(ctx, data_dir) == {"coverage": 0.5, "verified_fixed": 1.0}
    # a verdict that replaces another moves its entry from one verified outcome to the other
    _run(ctx, verdict(turns[1], outcome="partial", source="revert", detail="reverted by 1a2b3c"))
    assert _assert_exported_equal_the_logs(ctx, data_dir) == {"coverage": 0.5, "verified_fixed": 0.5}
    # rotation drops the oldest (the merged one) at the cap of 4
    _run(ctx, turn(4, kind="fixed", ts=1_700_000_010.0))
    assert _assert_exported_equal_the_logs(ctx, data_dir) == {"coverage": 0.25, "verified_fixed": 0.0}
    [reverted] = [e for e in store.read(OWNER, "github.com/acme/widgets").entries if e.verdict]
    assert store.forget(OWNER, reverted.id)
    registry = CollectorRegistry()
    registry.register(VerifiedCollector(lambda: service.fleet_summaries(store, [OWNER])))
    assert _exported(registry, "fixmem_verified_entries") == dict.fromkeys(OUTCOMES, 0.0)
    assert (
        sum(_exported(registry, "fixmem_stored_entries").values()) == 3 == sum(_recount(data_dir)[0].values())
    )


def test_read_once_per_ttl_and_absent_when_the_store_fails() -> None:
    calls: list[int] = []
    now = [0.0]
    one = LogSummary("p", 2, {"fixed": 2, "partial": 0, "unverified": 0}, 1.0, 2.0,
                     claimed={"fixed": 1, "partial": 1, "unverified": 0},
                     verified={"fixed": 1, "partial": 0, "unverified": 0})  # fmt: skip

    def summaries() -> list[LogSummary]:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("summary unreadable")
        return [one, one]

    collector = VerifiedCollector(summaries, ttl=60.0, clock=lambda: now[0])
    assert list(collector.collect()) and list(collector.collect()) and len(calls) == 1
    now[0] = 61.0
    assert list(collector.collect()) == []
    labels = {k for f in verified_families([one]) for s in f.samples for k in s.labels}
    assert labels == {"outcome"}
    registry = CollectorRegistry()
    registry.register(VerifiedCollector(lambda: [one, one]))
    assert _exported(registry, "fixmem_stored_entries") == {"fixed": 2.0, "partial": 2.0, "unverified": 0.0}
