"""Fleet counters: pure bucket math, and BatchReports adding up in Redis."""

from __future__ import annotations

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from ingest import keys
from workers.counters import (
    BATCH_DURATION_BUCKETS,
    EVENT_TO_ENTRY_BUCKETS,
    BatchReport,
    bucket_counts,
    read_counters,
    record,
)


@pytest.mark.parametrize(
    ("values", "bounds", "expected"),
    [
        ([], (1.0, 2.0), [0, 0]),
        ([0.5, 1.0, 1.5, 3.0], (1.0, 2.0), [2, 1]),  # (prev, bound]: le is inclusive; 3.0 only in +Inf
        ([0.0], (0.005,), [1]),
        ([10.0, 10.0], (1.0, 5.0, 10.0), [0, 0, 2]),
        ([1.0, 1.0000001, 5.0, 4.9], (1.0, 5.0), [1, 3]),  # a value just past a bound goes to the next
    ],
)
def test_bucket_counts_table(values: list[float], bounds: tuple[float, ...], expected: list[int]) -> None:
    assert bucket_counts(values, bounds) == expected


@given(st.lists(st.floats(0, 1000, allow_nan=False), max_size=50))
def test_each_value_counts_once_in_the_first_bucket_whose_bound_holds_it(values: list[float]) -> None:
    """The oracle is a plain comparison per bucket, not bucket_counts itself."""
    bounds = EVENT_TO_ENTRY_BUCKETS
    lower = (float("-inf"), *bounds[:-1])
    expected = [sum(1 for v in values if lo < v <= hi) for lo, hi in zip(lower, bounds, strict=True)]
    assert bucket_counts(values, bounds) == expected


def test_report_round_trips_through_json() -> None:
    report = BatchReport(
        events={"recorded": 2, "duplicate": 1},
        entries={"fixed": 2},
        rotation_dropped={"unverified": 1},
        latencies=(0.5, 1.5),
        duration_seconds=0.25,
        last_entry_ts=1700000000.0,
        quarantined=1,
    )
    assert BatchReport.from_json(report.to_json()) == report


def _record(client: redis.Redis, report: BatchReport) -> None:
    with client.pipeline(transaction=True) as pipe:
        record(pipe, report)
        pipe.execute()


def test_reports_add_up_in_redis(redis_client: redis.Redis) -> None:
    a = BatchReport(
        events={"recorded": 3, "skipped_no_files": 1, "dead_letter": 1},
        entries={"fixed": 2, "partial": 1},
        rotation_dropped={"unverified": 2},
        latencies=(0.2, 0.3, 45.0),
        duration_seconds=0.04,
        last_entry_ts=1700000100.0,
    )
    b = BatchReport(
        events={"recorded": 1, "duplicate": 4},
        entries={"unverified": 1},
        latencies=(700.0,),
        duration_seconds=2.0,
        last_entry_ts=1700000050.0,  # an older batch finishing later does not move the gauge back
    )
    _record(redis_client, a)
    _record(redis_client, b)
    fleet = read_counters(redis_client)
    assert fleet.events == {
        "recorded": 4,
        "duplicate": 4,
        "skipped_no_files": 1,
        "skipped_disabled": 0,
        "skipped_no_owner": 0,
        "dead_letter": 0,  # counted where the dead letter is written (ingest.dead_letters.add)
        "verdict": 0,
    }
    assert fleet.entries == {"fixed": 2, "partial": 1, "unverified": 1}
    assert fleet.rotation_dropped == {"fixed": 0, "partial": 0, "unverified": 2}
    assert fleet.event_to_entry.count == 4
    assert fleet.event_to_entry.sum == pytest.approx(745.5)
    buckets = dict(fleet.event_to_entry.buckets)
    assert (buckets[0.25], buckets[60.0], buckets[600.0]) == (1, 3, 3)  # 700 s is only in +Inf
    assert fleet.batch_duration.count == 2
    assert dict(fleet.batch_duration.buckets)[0.05] == 1
    assert fleet.last_entry_ts == 1700000100.0
    assert fleet.pipeline["jobs_done"] == 2
    assert set(BATCH_DURATION_BUCKETS) == {b for b, _ in fleet.batch_duration.buckets}


def test_empty_redis_reads_as_zeros(redis_client: redis.Redis) -> None:
    fleet = read_counters(redis_client)
    assert set(fleet.events.values()) == {0}
    assert fleet.dead_letters["too_many_deliveries"] == 0
    assert fleet.last_entry_ts is None
    assert fleet.event_to_entry.count == 0
    assert all(key.startswith(keys.PREFIX + ":metrics:") for key in keys.ALL_METRICS)


def test_a_batch_writes_one_field_per_bucket_its_values_fall_in(redis_client: redis.Redis) -> None:
    """One HINCRBY per occupied bucket, not one per bound (the counters' MULTI/EXEC is per job)."""
    _record(redis_client, BatchReport(latencies=(0.3, 0.4), duration_seconds=0.02))
    fields = {k.decode() for k in redis_client.hkeys(keys.HIST_EVENT_TO_ENTRY)}
    assert fields == {"in=0.5", "count", "sum"}
    assert {k.decode() for k in redis_client.hkeys(keys.HIST_BATCH_DURATION)} == {"in=0.025", "count", "sum"}
    assert dict(read_counters(redis_client).event_to_entry.buckets)[600.0] == 2


def test_cumulative_fields_of_earlier_versions_still_count(redis_client: redis.Redis) -> None:
    """A fleet upgraded in place keeps its histogram: earlier versions wrote cumulative ``le=`` fields."""
    redis_client.hset(
        keys.HIST_EVENT_TO_ENTRY,
        mapping={f"le={b:g}": (1 if b >= 0.5 else 0) for b in EVENT_TO_ENTRY_BUCKETS}
        | {"count": 1, "sum": 0.4},
    )
    _record(redis_client, BatchReport(latencies=(0.02,), duration_seconds=0.02))
    hist = read_counters(redis_client).event_to_entry
    buckets = dict(hist.buckets)
    assert (buckets[0.01], buckets[0.025], buckets[0.25], buckets[0.5], buckets[600.0]) == (0, 1, 1, 2, 2)
    assert hist.count == 2
