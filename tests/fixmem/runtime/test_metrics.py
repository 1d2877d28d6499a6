"""fixmem.runtime.metrics: the pure families, the scrape-time collector on a real Redis, Redis down,
promtool."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from fixmem.runtime.metrics import (
    FleetCollector,
    FleetSnapshot,
    FleetSource,
    api_metrics,
    fleet_families,
    outcome_ratios,
    scrape_client,
)
from fixmem.runtime.redis_server import EmbeddedRedis
from ingest import keys
from ingest.status import PipelineStatus, QueueStatus, StreamStatus
from workers.counters import (
    BATCH_DURATION_BUCKETS,
    EVENT_TO_ENTRY_BUCKETS,
    BatchReport,
    FleetCounters,
    Histogram,
    record,
)

SOURCE = FleetSource(
    streams={"live": "fixmem:turns", "backfill": "fixmem:turns:backfill"},
    group="fixmem",
    queues=("fixmem-live", "fixmem-backfill"),
    dead_stream="fixmem:dead",
)


class _Fixed(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def _registry(families: list[Metric]) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(_Fixed(families))
    return registry


def _empty_hist(bounds: tuple[float, ...]) -> Histogram:
    return Histogram(tuple((b, 0) for b in bounds), 0.0, 0)


def _snapshot(entries: dict[str, int], *, last: float | None = None) -> FleetSnapshot:
    counters = FleetCounters(
        events={"recorded": sum(entries.values()), "duplicate": 2, "dead_letter": 1},
        entries=entries,
        rotation_dropped={"unverified": 4},
        dead_letters={"invalid_json": 1},
        pipeline={"jobs_done": 7, "Bad Label!": 3},
        event_to_entry=Histogram(((0.5, 2), (1.0, 3)), 1.7, 3),
        batch_duration=_empty_hist(BATCH_DURATION_BUCKETS),
        last_entry_ts=last,
        verdicts={"ci|fixed|applied": 2, "ci|partial|held": 1},
        overturns={"ci|partial|fixed": 1},
        agents={"aider|gpt-4o|fixed": 1},
    )
    status = PipelineStatus(
        streams=[
            StreamStatus("fixmem:turns", 10, "fixmem", True, 3, "1-0", 5, False),
            StreamStatus("fixmem:turns:backfill", 0, "fixmem", False, 0, None, 0, False),
        ],
        queues=[QueueStatus("fixmem-live", 2, 1, 0, 4), QueueStatus("fixmem-backfill", 0, 0, 0, 0)],
        dead_letters=1,
        workers=2,
    )
    return FleetSnapshot(
        counters=counters,
        status=status,
        stream_labels={"fixmem:turns": "live", "fixmem:turns:backfill": "backfill"},
        last_event_ts={"live": 1_700_000_100.0},
    )


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ({}, {"fixed": 0.0, "partial": 0.0, "unverified": 0.0}),
        ({"fixed": 3, "partial": 1}, {"fixed": 0.75, "partial": 0.25, "unverified": 0.0}),
        ({"fixed": 1, "partial": 1, "unverified": 2}, {"fixed": 0.25, "partial": 0.25, "unverified": 0.5}),
        ({"unverified": 5, "bogus": 9}, {"fixed": 0.0, "partial": 0.0, "unverified": 1.0}),
    ],
)
def test_outcome_ratios_table(entries: dict[str, int], expected: dict[str, float]) -> None:
    assert outcome_ratios(entries) == expected


@given(st.dictionaries(st.sampled_from(["fixed", "partial", "unverified"]), st.integers(0, 10**9)))
def test_outcome_ratios_sum_to_one_or_are_all_zero(entries: dict[str, int]) -> None:
    ratios = outcome_ratios(entries)
    assert set(ratios) == {"fixed", "partial", "unverified"}
    assert all(0.0 <= r <= 1.0 for r in ratios.values())
    if sum(entries.values()):
        assert sum(ratios.values()) == pytest.approx(1.0)
    else:
        assert sum(ratios.values()) == 0.0


def test_fleet_families_carry_every_counter_and_gauge() -> None:
    reg = _registry(fleet_families(_snapshot({"fixed": 6, "partial": 2}, last=1_700_000_050.0)))
    value = reg.get_sample_value
    assert value("fixmem_entries_total", {"outcome": "fixed"}) == 6
    assert value("fixmem_entries_total", {"outcome": "unverified"}) == 0
    assert value("fixmem_outcome_ratio", {"outcome": "fixed"}) == 0.75
    assert value("fixmem_outcome_ratio", {"outcome": "partial"}) == 0.25
    assert value("fixmem_events_total", {"result": "duplicate"}) == 2
    assert value("fixmem_dead_letters_total", {"reason": "invalid_json"}) == 1
    assert value("fixmem_rotation_dropped_total", {"outcome": "unverified"}) == 4
    assert value("fixmem_pipeline_operations_total", {"operation": "jobs_done"}) == 7
    assert value("fixmem_pipeline_operations_total", {"operation": "Bad Label!"}) is None
    assert value("fixmem_event_to_entry_seconds_bucket", {"le": "0.5"}) == 2
    assert value("fixmem_event_to_entry_seconds_bucket", {"le": "+Inf"}) == 3
    assert value("fixmem_event_to_entry_seconds_count") == 3
    assert value("fixmem_event_to_entry_seconds_sum") == 1.7
    assert value("fixmem_batch_duration_seconds_count") == 0
    assert value("fixmem_last_entry_timestamp_seconds") == 1_700_000_050.0
    assert value("fixmem_stream_lag_entries", {"stream": "live"}) == 5
    assert value("fixmem_stream_pending_entries", {"stream": "live"}) == 3
    assert value("fixmem_stream_lag_entries", {"stream": "backfill"}) == 0
    assert value("fixmem_stream_last_event_timestamp_seconds", {"stream": "live"}) == 1_700_000_100.0
    assert value("fixmem_stream_last_event_timestamp_seconds", {"stream": "backfill"}) is None
    assert value("fixmem_queue_jobs", {"queue": "fixmem-live", "state": "queued"}) == 2
    assert value("fixmem_queue_jobs", {"queue": "fixmem-live", "state": "failed"}) == 4
    assert value("fixmem_dead_letters_stored") == 1
    assert value("fixmem_workers") == 2


def test_no_entry_yet_means_no_last_entry_gauge_and_zero_ratios() -> None:
    reg = _registry(fleet_families(_snapshot({})))
    assert reg.get_sample_value("fixmem_last_entry_timestamp_seconds") is None
    for outcome in ("fixed", "partial", "unverified"):
        assert reg.get_sample_value("fixmem_outcome_ratio", {"outcome": outcome}) == 0.0


def test_collector_reads_what_jobs_recorded_in_redis(redis_client: redis.Redis) -> None:
    for report in (
        BatchReport(
            events={"recorded": 3, "skipped_no_files": 1},
            entries={"fixed": 2, "partial": 1},
            latencies=(0.02, 0.3, 4.0),
            duration_seconds=0.04,
            last_entry_ts=1_700_000_001.5,
        ),
        BatchReport(
            events={"recorded": 1, "duplicate": 2},
            entries={"unverified": 1},
            rotation_dropped={"unverified": 1},
            latencies=(700.0,),
            duration_seconds=0.2,
            last_entry_ts=1_700_000_000.0,  # older: the gauge keeps the newest
        ),
    ):
        with redis_client.pipeline(transaction=True) as pipe:
            record(pipe, report)
            pipe.execute()
    first = redis_client.xadd("fixmem:turns", {"event": "{}"})
    registry = CollectorRegistry()
    registry.register(FleetCollector(redis_client, SOURCE))
    value = registry.get_sample_value
    assert value("fixmem_redis_up") == 1
    assert value("fixmem_entries_total", {"outcome": "fixed"}) == 2
    assert value("fixmem_entries_total", {"outcome": "unverified"}) == 1
    assert value("fixmem_outcome_ratio", {"outcome": "fixed"}) == 0.5
    assert value("fixmem_outcome_ratio", {"outcome": "partial"}) == 0.25
    assert value("fixmem_events_total", {"result": "recorded"}) == 4
    assert value("fixmem_events_total", {"result": "dead_letter"}) == 0
    assert value("fixmem_rotation_dropped_total", {"outcome": "unverified"}) == 1
    assert value("fixmem_event_to_entry_seconds_count") == 4
    assert value("fixmem_event_to_entry_seconds_bucket", {"le": "0.025"}) == 1
    assert value("fixmem_event_to_entry_seconds_bucket", {"le": "5"}) == 3
    assert value("fixmem_event_to_entry_seconds_bucket", {"le": f"{EVENT_TO_ENTRY_BUCKETS[-1]:g}"}) == 3
    assert value("fixmem_event_to_entry_seconds_bucket", {"le": "+Inf"}) == 4
    assert value("fixmem_event_to_entry_seconds_sum") == pytest.approx(704.32)
    assert value("fixmem_batch_duration_seconds_count") == 2
    assert value("fixmem_last_entry_timestamp_seconds") == 1_700_000_001.5
    assert value("fixmem_stream_length_entries", {"stream": "live"}) == 1
    assert value("fixmem_stream_lag_entries", {"stream": "live"}) == 1  # no group yet: all of it
    newest = value("fixmem_stream_last_event_timestamp_seconds", {"stream": "live"})
    assert newest == int(first.decode().split("-")[0]) / 1000
    assert value("fixmem_queue_jobs", {"queue": "fixmem-live", "state": "queued"}) == 0
    # A second scrape reads Redis again (nothing is cached in the process).
    redis_client.hincrby(keys.METRICS_ENTRIES, "partial", 5)
    assert value("fixmem_entries_total", {"outcome": "partial"}) == 6


def test_redis_down_exports_redis_up_zero_and_nothing_else() -> None:
    dead = scrape_client("redis://127.0.0.1:1/0", timeout=0.5)
    metrics = api_metrics(dead, SOURCE)
    assert metrics.registry.get_sample_value("fixmem_redis_up") == 0
    assert metrics.registry.get_sample_value("fixmem_entries_total", {"outcome": "fixed"}) is None
    text = generate_latest(metrics.registry).decode()
    assert "fixmem_redis_up 0.0" in text
    assert "fixmem_recall_duration_seconds_bucket" in text


def test_exposition_passes_promtool_check_metrics(redis_client: redis.Redis) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus); .ci/run installs it")
    metrics = api_metrics(redis_client, SOURCE)
    metrics.recall_duration.observe(0.003)
    exposition = generate_latest(metrics.registry)
    done = subprocess.run([promtool, "check", "metrics"], input=exposition, capture_output=True, check=False)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


def test_a_scrape_during_a_big_backlog_loads_no_events_and_counts_the_lag(tmp_path: Path) -> None:
    """On Redis 6.2 the lag was counted with a Lua ``#XRANGE … COUNT 10000``: every scrape loaded up to
    10,000 events into Redis's memory (+30 MB peak here). Measured on a server of its own, since
    ``used_memory_peak`` cannot be reset; nothing acknowledged is left untrimmed, so the 6.2 figure
    (XLEN - pending) must be the true lag."""
    with EmbeddedRedis(data_dir=tmp_path / "redis", appendonly=False) as server:
        client = redis.Redis.from_url(server.url)
        assert client.info("server")["redis_version"].startswith("6.2")
        stream = SOURCE.streams["live"]
        client.xgroup_create(stream, SOURCE.group, id="0", mkstream=True)
        for _ in range(30):
            with client.pipeline(transaction=False) as pipe:
                for _ in range(100):
                    pipe.xadd(stream, {"event": b"x" * 10_000})
                pipe.execute()
        read = client.xreadgroup(SOURCE.group, "c1", {stream: ">"}, count=500)[0][1]
        client.xack(stream, SOURCE.group, *[i for i, _ in read[:200]])
        client.xtrim(stream, minid=read[200][0], approximate=False)  # nothing acked is left untrimmed
        registry = CollectorRegistry()
        registry.register(FleetCollector(scrape_client(server.url), SOURCE))
        before = int(client.info("memory")["used_memory_peak"])
        lag = registry.get_sample_value("fixmem_stream_lag_entries", {"stream": "live"})
        grown = int(client.info("memory")["used_memory_peak"]) - before
        assert lag == 2500
        assert registry.get_sample_value("fixmem_stream_pending_entries", {"stream": "live"}) == 300
        assert grown < 1 << 20, f"the scrape raised Redis's peak memory by {grown} bytes"
        client.close()


def test_verdict_and_agent_families_keep_bounded_labels() -> None:
    snapshot = _snapshot({"fixed": 1})
    counters = snapshot.counters
    verdicts = {
        "ci|fixed|applied": 5,
        "revert|partial|applied": 1,
        "nightly|fixed|applied": 9,
        "ci|x|held": 1,
    }
    overturns = {"ci|partial|fixed": 3, "ci|partial|bogus": 2}
    agents = {"openhands|gpt-4o|fixed": 4, "other|other|partial": 2, "a|b|c|d": 1}
    families = fleet_families(
        FleetSnapshot(
            counters=FleetCounters(
                **{
                    **counters.__dict__,
                    "verdicts": verdicts,
                    "overturns": overturns,
                    "agents": agents,
                    "unlinked": {"ambiguous": 2, "weird": 7},
                }
            ),
            status=snapshot.status,
            stream_labels=snapshot.stream_labels,
            last_event_ts=snapshot.last_event_ts,
        )
    )
    value = _registry(families).get_sample_value
    assert value("fixmem_verdicts_total", {"source": "ci", "outcome": "fixed", "result": "applied"}) == 5
    assert (
        value("fixmem_verdicts_total", {"source": "nightly", "outcome": "fixed", "result": "applied"}) is None
    )
    assert value("fixmem_verdicts_unlinked_total", {"reason": "ambiguous"}) == 2
    assert value("fixmem_verdicts_unlinked_total", {"reason": "no_match"}) == 0
    assert value("fixmem_verdicts_unlinked_total", {"reason": "weird"}) is None
    overturned = {"source": "ci", "agent_outcome": "partial", "verdict_outcome": "fixed"}
    assert value("fixmem_verdict_overturns_total", overturned) == 3
    assert (
        value("fixmem_agent_entries_total", {"harness": "openhands", "model": "gpt-4o", "outcome": "fixed"})
        == 4
    )
    assert (
        value("fixmem_agent_entries_total", {"harness": "other", "model": "other", "outcome": "partial"}) == 2
    )
    text = generate_latest(_registry(families)).decode()
    assert "nightly" not in text and "bogus" not in text and '"d"' not in text


def test_agent_labels_past_the_cap_fold_into_other(redis_client: redis.Redis) -> None:
    from workers.counters import read_counters, record_agents  # noqa: PLC0415

    for model in ("m1", "m2", "m3", "m1"):
        with redis_client.pipeline(transaction=True) as pipe:
            record_agents(pipe, {f"aider|{model}|fixed": 1}, label_cap=2)
            pipe.execute()
    assert read_counters(redis_client).agents == {
        "aider|m1|fixed": 2,
        "aider|m2|fixed": 1,
        "aider|other|fixed": 1,
    }
