"""The pure batching core: classify entries, cut jobs, derive ids."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.batching import (
    Accepted,
    Refused,
    StreamEntry,
    classify,
    classify_all,
    job_id,
    parse_stream_id,
    plan_jobs,
    runs,
    stream_id_seconds,
    successor,
)
from ingest.errors import DeadLetterReason
from tests.ingest.turns import turn, wire

RQ_JOB_ID = re.compile(r"[A-Za-z0-9_-]+")


@pytest.mark.parametrize(
    ("stream_id", "parsed", "after", "seconds"),
    [
        ("1700000000000-0", (1700000000000, 0), "1700000000000-1", 1700000000.0),
        ("1700000000123-7", (1700000000123, 7), "1700000000123-8", 1700000000.123),
        ("0-0", (0, 0), "0-1", 0.0),
        ("5", (5, 0), "5-1", 0.005),
    ],
)
def test_stream_ids(stream_id: str, parsed: tuple[int, int], after: str, seconds: float) -> None:
    assert parse_stream_id(stream_id) == parsed
    assert successor(stream_id) == after
    assert stream_id_seconds(stream_id) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({b"other": b"x"}, DeadLetterReason.MISSING_FIELD),
        ({b"event": b"{nope"}, DeadLetterReason.INVALID_JSON),
        ({b"event": b"\xff\xfe"}, DeadLetterReason.INVALID_UTF8),
        ({b"event": b"[1, 2]"}, DeadLetterReason.NOT_AN_OBJECT),
        ({b"event": b'{"v": 2}'}, DeadLetterReason.UNSUPPORTED_VERSION),
        ({b"event": b'{"v": 1, "ts": 1}'}, DeadLetterReason.INVALID_FIELDS),
        ({b"event": b'{"v": 1, "pad": "' + b"x" * 5000 + b'"}'}, DeadLetterReason.TOO_LARGE),
    ],
)
def test_classify_refuses_with_a_reason_and_keeps_the_payload(
    fields: dict[bytes, bytes], reason: DeadLetterReason
) -> None:
    result = classify(StreamEntry("1-0", fields), max_bytes=4096)
    assert isinstance(result, Refused)
    assert result.reason is reason
    assert result.message
    assert result.payload == fields.get(b"event")


def test_classify_accepts_a_valid_event_as_the_bytes_it_arrived_as() -> None:
    raw = wire({**turn(1, owner="bob", project="p"), "workspace": "/home/bob/p"})
    result = classify(StreamEntry("1-0", {b"event": raw}), max_bytes=1 << 20)
    assert result == Accepted("1-0", "bob", "p", raw, "/home/bob/p")  # the workspace: ingest.workspaces


def _accepted(n: int, projects: int, size: int = 10) -> list[Accepted]:
    return [Accepted(f"{1000 + i}-0", "o", f"p{i % projects}", b"x" * size) for i in range(n)]


def test_plan_groups_by_project_in_stream_order() -> None:
    plans = plan_jobs(_accepted(9, 3), tag="live", max_events=100, max_bytes=1 << 20)
    assert [len(p.events) for p in plans] == [3, 3, 3]
    for plan in plans:
        assert len({(e.owner, e.project_key) for e in plan.events}) == 1
        ids = [parse_stream_id(e.stream_id) for e in plan.events]
        assert ids == sorted(ids)


def test_plan_cuts_at_the_event_and_byte_limits() -> None:
    by_count = plan_jobs(_accepted(10, 1), tag="live", max_events=4, max_bytes=1 << 20)
    assert [len(p.events) for p in by_count] == [4, 4, 2]
    by_bytes = plan_jobs(_accepted(10, 1, size=100), tag="live", max_events=100, max_bytes=250)
    assert [len(p.events) for p in by_bytes] == [2, 2, 2, 2, 2]
    alone = plan_jobs(_accepted(1, 1, size=1000), tag="live", max_events=100, max_bytes=250)
    assert [len(p.events) for p in alone] == [1]  # an event over the job limit still gets a job


def test_job_ids_are_deterministic_and_valid_rq_ids() -> None:
    first = plan_jobs(_accepted(20, 4), tag="live", max_events=3, max_bytes=1 << 20)
    again = plan_jobs(list(reversed(_accepted(20, 4))), tag="live", max_events=3, max_bytes=1 << 20)
    assert sorted(p.job_id for p in first) == sorted(p.job_id for p in again)
    assert len({p.job_id for p in first}) == len(first)
    assert all(RQ_JOB_ID.fullmatch(p.job_id) for p in first)
    backfill = plan_jobs(_accepted(20, 4), tag="backfill", max_events=3, max_bytes=1 << 20)
    assert not {p.job_id for p in first} & {p.job_id for p in backfill}
    with pytest.raises(ValueError, match="at least one"):
        job_id("live", [])


entries = st.lists(st.tuples(st.integers(0, 5), st.integers(1, 300)), min_size=0, max_size=60).map(
    lambda specs: [
        Accepted(f"{2000 + i}-{i % 3}", f"o{p % 2}", f"p{p}", b"y" * size)
        for i, (p, size) in enumerate(specs)
    ]
)


@given(entries, st.integers(1, 10), st.integers(1, 2000))
def test_plans_partition_the_events_within_limits(
    accepted: list[Accepted], max_events: int, max_bytes: int
) -> None:
    plans = plan_jobs(accepted, tag="live", max_events=max_events, max_bytes=max_bytes)
    planned = [e for p in plans for e in p.events]
    assert sorted(planned, key=lambda e: e.stream_id) == sorted(accepted, key=lambda e: e.stream_id)
    for plan in plans:
        assert len({(e.owner, e.project_key) for e in plan.events}) == 1
        assert 1 <= len(plan.events) <= max_events
        assert len(plan.events) == 1 or plan.size_bytes <= max_bytes


def test_classify_all_keeps_stream_order() -> None:
    good = [StreamEntry(f"{i}-0", {b"event": wire(turn(i))}) for i in range(3)]
    bad = StreamEntry("9-0", {b"event": b"nope"})
    accepted, refused = classify_all([good[0], bad, good[1], good[2]], max_bytes=1 << 20)
    assert [a.stream_id for a in accepted] == ["0-0", "1-0", "2-0"]
    assert [r.stream_id for r in refused] == ["9-0"]


# -- live jobs: small projects packed, big ones on their own (pack_events) --------------------------------


def _events(counts: dict[str, int]) -> list[Accepted]:
    """``counts`` events per project, interleaved in stream order as a steady flow would bring them."""
    remaining = dict(counts)
    out: list[Accepted] = []
    while any(remaining.values()):
        for project, left in remaining.items():
            if left:
                out.append(Accepted(f"{1000 + len(out)}-0", "o", project, b"{}"))
                remaining[project] = left - 1
    return out


def test_small_projects_share_a_job_and_a_big_one_keeps_its_own() -> None:
    accepted = _events({"big": 150, "b": 5, "c": 5, "d": 120})
    plans = plan_jobs(
        accepted, tag="live", max_events=2000, max_bytes=1 << 20, by_project=False, pack_events=100
    )
    jobs = [sorted({a.project_key for a in p.events}) for p in plans]
    assert jobs == [["big"], ["b", "c"], ["d"]]  # a backlog's big projects are never cut at the pack size


@given(
    st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 40), min_size=1),
    st.integers(1, 30),
    st.integers(1, 60),
)
def test_packed_jobs_keep_projects_whole_and_mixed_jobs_small(
    counts: dict[str, int], pack: int, max_events: int
) -> None:
    accepted = _events(counts)
    plans = plan_jobs(
        accepted, tag="live", max_events=max_events, max_bytes=1 << 20, by_project=False, pack_events=pack
    )
    assert sorted(a.stream_id for p in plans for a in p.events) == sorted(a.stream_id for a in accepted)
    for plan in plans:
        assert len(plan.events) <= max_events
        if len({a.project_key for a in plan.events}) > 1:
            assert len(plan.events) <= min(pack, max_events)
    for project, n in counts.items():  # a project within max_events is in one job: no lock waits
        holding = [p for p in plans if any(a.project_key == project for a in p.events)]
        assert len(holding) == (1 if n <= max_events else -(-n // max_events))


@pytest.mark.parametrize(
    ("ids", "place", "expected"),
    [
        ([], {}, []),
        (["1-0", "1-1", "2-0"], {"1-0": (0, 0), "1-1": (0, 1), "2-0": (0, 2)}, [("1-0", "2-0", 3)]),
        (["1-0", "2-0"], {"1-0": (0, 0), "2-0": (0, 2)}, [("1-0", "1-0", 1), ("2-0", "2-0", 1)]),  # gap
        (["1-0", "2-0"], {"1-0": (0, 4), "2-0": (5, 0)}, [("1-0", "1-0", 1), ("2-0", "2-0", 1)]),  # 2 reads
        (["1-0", "2-0"], {}, [("1-0", "1-0", 1), ("2-0", "2-0", 1)]),  # reclaimed: no place
        (
            ["5-0", "6-0", "1-0", "2-0"],  # two projects' groups, each in stream order
            {"1-0": (0, 0), "2-0": (0, 1), "5-0": (0, 4), "6-0": (0, 5)},
            [("5-0", "6-0", 2), ("1-0", "2-0", 2)],
        ),
    ],
)
def test_runs_are_ids_adjacent_in_one_read(
    ids: list[str], place: dict[str, tuple[int, int]], expected: list[tuple[str, str, int]]
) -> None:
    assert runs(ids, place) == expected
