"""The pure backfill planning: --since, run keys, one file; backfill jobs span projects."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.backfill.plan import (
    EMPTY,
    MODIFIED_BEFORE_SINCE,
    NO_TURNS,
    NOT_A_LOG,
    is_recent,
    parse_since,
    plan_file,
    run_key,
    skipped_unread,
)
from ingest.backfill.records import BackfillError, FileRecord, FileStatus
from ingest.batching import Accepted, parse_stream_id, plan_jobs
from ingest.importers import UNDATED_EPOCH, ImportedFile
from ingest.importers.files import EMPTY_FILE, UNRECOGNIZED
from ingest.schema import TurnEvent, validate_event

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC).timestamp()


def _event(i: int, ts: float = 1_750_000_000.0, *, derived: bool = False) -> TurnEvent:
    meta: dict[str, object] = {"harness": "test", "turn": i}
    if derived:
        meta["ts_derived"] = True
    return validate_event(
        {"v": 1, "event_id": f"bf-{i:032x}", "ts": ts, "owner": "o", "project_key": "p", "harness_meta": meta}
    )


# -- --since ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-01-31", datetime(2025, 1, 31, tzinfo=UTC).timestamp()),
        ("2025-01-31T12:30:00Z", datetime(2025, 1, 31, 12, 30, tzinfo=UTC).timestamp()),
        ("2025-01-31T12:30", datetime(2025, 1, 31, 12, 30, tzinfo=UTC).timestamp()),  # naive = UTC
        ("2025-01-31T14:30:00+02:00", datetime(2025, 1, 31, 12, 30, tzinfo=UTC).timestamp()),
        ("30d", NOW - 30 * 86400),
        ("12h", NOW - 12 * 3600),
        ("90m", NOW - 90 * 60),
        ("2w", NOW - 14 * 86400),
        ("1.5d", NOW - 1.5 * 86400),
    ],
)
def test_since_accepts_dates_times_and_ages(text: str, expected: float) -> None:
    assert parse_since(text, now=NOW) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["yesterday", "", "30x", "2025-13-01", "-5d", "d30"])
def test_since_refuses_anything_else_and_names_the_forms(text: str) -> None:
    with pytest.raises(BackfillError, match="expected a date"):
        parse_since(text, now=NOW)


@given(st.integers(min_value=0, max_value=10_000), st.sampled_from("mhdw"))
def test_an_age_is_never_in_the_future(amount: int, unit: str) -> None:
    assert parse_since(f"{amount}{unit}", now=NOW) <= NOW


def test_undated_turns_are_judged_by_the_file_time() -> None:
    dated_old = _event(0, ts=NOW - 10 * 86400)
    undated = _event(1, ts=UNDATED_EPOCH + 1, derived=True)
    since = NOW - 86400
    assert not is_recent(dated_old, since=since, mtime=NOW)
    assert is_recent(undated, since=since, mtime=NOW)
    assert not is_recent(undated, since=since, mtime=since - 1)
    assert is_recent(dated_old, since=None, mtime=0)


# -- run keys -----------------------------------------------------------------------------------------------


def test_the_same_backfill_has_the_same_key_whatever_the_path_order() -> None:
    one = run_key(["/a", "/b"], format="auto", owner="o", project=None, since=None)
    assert one == run_key(["/b", "/a"], format="auto", owner="o", project=None, since=None)


@pytest.mark.parametrize(
    "change",
    [
        {"format": "aider"},
        {"owner": "other"},
        {"project": "p"},
        {"since": "30d"},
    ],
)
def test_any_option_that_changes_the_events_changes_the_key(change: dict[str, str]) -> None:
    base: dict[str, str | None] = {"format": "auto", "owner": "o", "project": None, "since": None}
    assert run_key(["/a"], **base) != run_key(["/a"], **{**base, **change})  # type: ignore[arg-type]
    assert run_key(["/a"], **base) != run_key(["/a", "/b"], **base)  # type: ignore[arg-type]


# -- one file -----------------------------------------------------------------------------------------------


def _plan(imported: ImportedFile, since: float | None = None, mtime: float = NOW) -> FileRecord:
    record, events = plan_file(imported, path="/x/f", size=10, mtime_ns=int(mtime * 1e9), since=since)
    assert len(events) == record.turns - record.held_back or record.status is FileStatus.SKIPPED
    return record


@pytest.mark.parametrize(
    ("imported", "status", "reason", "turns"),
    [
        (ImportedFile(Path("f"), "swe-agent", [_event(0)]), FileStatus.IMPORTED, "", 1),
        (ImportedFile(Path("f"), None, [], EMPTY_FILE), FileStatus.SKIPPED, EMPTY, 0),
        (ImportedFile(Path("f"), None, [], f"{UNRECOGNIZED}: …"), FileStatus.SKIPPED, NOT_A_LOG, 0),
        (ImportedFile(Path("f"), "codex", []), FileStatus.SKIPPED, NO_TURNS, 0),
        (
            ImportedFile(Path("f"), "claude-code", [], None, ("subagent log: imported with its parent",)),
            FileStatus.SKIPPED, "subagent log: imported with its parent", 0,
        ),
        (ImportedFile(Path("f"), None, [], "cannot read file: Permission denied"), FileStatus.FAILED,
         "cannot read file: Permission denied", 0),
        (ImportedFile(Path("f"), "mini-swe-agent", [], "mini-swe-agent log: bad JSON"), FileStatus.FAILED,
         "mini-swe-agent log: bad JSON", 0),
        (ImportedFile(Path("f"), "claude-code", [_event(0), _event(1)], "line 7: invalid JSON"),
         FileStatus.PARTIAL, "line 7: invalid JSON", 2),
    ],
)  # fmt: skip
def test_every_file_gets_one_status_and_a_reason(
    imported: ImportedFile, status: FileStatus, reason: str, turns: int
) -> None:
    record = _plan(imported)
    assert (record.status, record.reason, record.turns) == (status, reason, turns)
    assert record.format == imported.format


def test_turns_before_since_are_held_back_and_counted() -> None:
    events = [_event(0, ts=NOW - 5 * 86400), _event(1, ts=NOW - 3600), _event(2, ts=NOW)]
    record, kept = plan_file(
        ImportedFile(Path("f"), "codex", events),
        path="/f",
        size=1,
        mtime_ns=int(NOW * 1e9),
        since=NOW - 86400,
    )
    assert [e.event_id for e in kept] == [events[1].event_id, events[2].event_id]
    assert (record.turns, record.held_back, record.status) == (3, 1, FileStatus.IMPORTED)


def test_a_file_skipped_unread_says_why() -> None:
    record = skipped_unread("/f", 5, 7, MODIFIED_BEFORE_SINCE)
    assert (record.status, record.reason, record.turns) == (FileStatus.SKIPPED, MODIFIED_BEFORE_SINCE, 0)


# -- backfill jobs span projects (ingest.batching.plan_jobs, by_project=False) ---------------------------

_accepted_lists = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["p1", "p2", "p3", "p4"]), st.integers(1, 300)),
    max_size=60,
).map(
    lambda rows: [
        Accepted(f"{1000 + i}-0", owner, project, b"x" * size)
        for i, (owner, project, size) in enumerate(rows)
    ]
)


@given(_accepted_lists, st.integers(1, 12), st.integers(300, 2000))
def test_backfill_jobs_span_projects_and_keep_each_project_together(
    accepted: list[Accepted], max_events: int, max_bytes: int
) -> None:
    plans = plan_jobs(accepted, tag="backfill", max_events=max_events, max_bytes=max_bytes, by_project=False)
    laid_out = [a for plan in plans for a in plan.events]
    assert sorted(a.stream_id for a in laid_out) == sorted(a.stream_id for a in accepted)  # each once
    for plan in plans:
        assert len(plan.events) <= max_events
        assert len(plan.events) == 1 or plan.size_bytes <= max_bytes
    projects = [(a.owner, a.project_key) for a in laid_out]
    runs = [p for i, p in enumerate(projects) if i == 0 or projects[i - 1] != p]
    assert len(runs) == len(set(projects))  # a project's events are contiguous across the jobs ...
    for project in set(projects):  # ... in stream order
        ids = [parse_stream_id(a.stream_id) for a in laid_out if (a.owner, a.project_key) == project]
        assert ids == sorted(ids)
    job_of = {a.stream_id: i for i, plan in enumerate(plans) for a in plan.events}
    for project in set(projects):  # a project that fits in one job is never cut (no lock waits)
        members = [a for a in accepted if (a.owner, a.project_key) == project]
        if len(members) <= max_events and sum(len(a.raw) for a in members) <= max_bytes:
            assert len({job_of[a.stream_id] for a in members}) == 1
    again = plan_jobs(accepted, tag="backfill", max_events=max_events, max_bytes=max_bytes, by_project=False)
    assert [p.job_id for p in again] == [p.job_id for p in plans]  # deterministic job ids


def test_backfill_jobs_are_fewer_than_per_project_jobs() -> None:
    accepted = [Accepted(f"{i}-0", "o", f"p{i % 10}", b"{}") for i in range(40)]
    per_project = plan_jobs(accepted, tag="live", max_events=50, max_bytes=1 << 20)
    spanning = plan_jobs(accepted, tag="backfill", max_events=25, max_bytes=1 << 20, by_project=False)
    assert (len(per_project), len(spanning)) == (10, 2)
    assert [len(p.events) for p in spanning] == [24, 16]  # whole projects of 4 events each
