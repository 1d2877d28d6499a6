"""The consumer's schedule (``ingest.schedule``): values in, decisions out, one table per rule."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ingest.schedule import (
    POLL_SECONDS,
    AfterCycle,
    BurstStep,
    BurstWait,
    Chores,
    Pressure,
    Read,
    after_cycle,
    burst_step,
    chores,
    first_read,
    idle_seconds,
    long_pause,
    next_read,
    pressure,
    wanted,
)


@dataclass(frozen=True)
class _Route:
    queue: str
    stream: str


LIVE = _Route("live", "fixmem:turns")
BACKFILL = _Route("backfill", "fixmem:backfill")


@pytest.mark.parametrize(
    ("now", "next_claim", "next_trim", "expected"),
    [
        (100.0, 0.0, 0.0, Chores(True, True, 110.0, 160.0)),  # the first pass: both at once
        (105.0, 110.0, 160.0, Chores(False, False, 110.0, 160.0)),
        (110.0, 110.0, 160.0, Chores(True, False, 120.0, 160.0)),  # due exactly at its time
        (161.0, 170.0, 160.0, Chores(False, True, 170.0, 221.0)),
    ],
)
def test_chores_fall_due_at_their_interval(
    now: float, next_claim: float, next_trim: float, expected: Chores
) -> None:
    got = chores(now, next_claim=next_claim, next_trim=next_trim, claim_interval=10.0, trim_interval=60.0)
    assert got == expected


@pytest.mark.parametrize(
    ("lengths", "paused", "expected"),
    [
        ([("live", 0), ("backfill", 0)], {}, Pressure((0, 1), {}, (), ())),
        ([("live", 2), ("backfill", 0)], {}, Pressure((0, 1), {}, (), ())),  # at the threshold: room
        ([("live", 3), ("backfill", 0)], {}, Pressure((1,), {"live": 50.0}, (0,), ())),
        (
            [("live", 3), ("backfill", 9)],
            {"live": 40.0},
            Pressure((), {"live": 40.0, "backfill": 50.0}, (1,), ()),
        ),
        (
            [("live", 1), ("backfill", 9)],
            {"live": 40.0, "backfill": 45.0},
            Pressure((0,), {"backfill": 45.0}, (), ((0, 10.0),)),
        ),
    ],
)
def test_a_queue_over_its_threshold_pauses_its_stream_until_it_is_back_under(
    lengths: list[tuple[str, int]], paused: dict[str, float], expected: Pressure
) -> None:
    assert pressure(lengths, paused, threshold=2, now=50.0) == expected


def test_the_pressure_check_does_not_change_the_pauses_it_is_given() -> None:
    paused = {"live": 1.0}
    pressure([("live", 0)], paused, threshold=2, now=5.0)
    assert paused == {"live": 1.0}


@pytest.mark.parametrize(("seconds", "expected"), [(0.0, False), (4.99, False), (5.0, True), (60.0, True)])
def test_only_a_long_pause_is_worth_an_info_line(seconds: float, expected: bool) -> None:
    assert long_pause(seconds) is expected


@pytest.mark.parametrize(
    ("limit", "block", "open_routes", "expected"),
    [
        (None, True, 2, Read(100, 1000)),
        (None, False, 2, Read(100, None)),  # burst mode never blocks
        (30, True, 2, Read(30, 1000)),  # max_events leaves 30
        (None, True, 1, Read(100, int(POLL_SECONDS * 1000))),  # another stream is paused: block a poll
        (None, False, 1, Read(100, None)),
        (None, True, 0, None),  # every queue paused: nothing to read
    ],
)
def test_the_first_read_of_a_cycle(
    limit: int | None, block: bool, open_routes: int, expected: Read | None
) -> None:
    got = first_read(
        wanted=wanted(limit, 500),
        read_count=100,
        read_block_ms=1000,
        block=block,
        open_routes=open_routes,
        routes=2,
    )
    assert got == expected


@pytest.mark.parametrize(
    ("gathered", "filled", "expected"),
    [
        (100, True, Read(100, None)),  # a full read: more may wait, read again without blocking
        (450, True, Read(50, None)),  # no more than the cycle wants
        (500, True, None),  # gathered all it wants
        (60, False, None),  # no stream filled its count: nothing more waits
    ],
)
def test_a_cycle_reads_again_while_a_read_filled_its_count(
    gathered: int, filled: bool, expected: Read | None
) -> None:
    assert next_read(wanted=500, gathered=gathered, filled=filled, read_count=100) == expected


@pytest.mark.parametrize(("block_ms", "expected"), [(1000, POLL_SECONDS), (10, 0.01)])
def test_with_every_queue_paused_the_consumer_waits_a_poll_at_most_its_block(
    block_ms: int, expected: float
) -> None:
    assert idle_seconds(block_ms) == expected


@pytest.mark.parametrize(
    ("got", "handled", "max_events", "burst", "expected"),
    [
        (5, 5, None, False, AfterCycle(done=False, check_burst=False, progress=True)),
        (0, 5, None, False, AfterCycle(done=False, check_burst=False, progress=False)),
        (5, 10, 10, False, AfterCycle(done=True, check_burst=False, progress=True)),  # max_events handled
        (0, 0, None, True, AfterCycle(done=False, check_burst=True, progress=False)),  # burst read nothing
        (0, 10, 10, True, AfterCycle(done=True, check_burst=False, progress=False)),
        (3, 3, None, True, AfterCycle(done=False, check_burst=False, progress=True)),
    ],
)
def test_after_a_cycle(
    got: int, handled: int, max_events: int | None, burst: bool, expected: AfterCycle
) -> None:
    assert after_cycle(got=got, handled=handled, max_events=max_events, burst=burst) == expected


def _step(paused: dict[_Route, int], wait: BurstWait, now: float) -> BurstStep:
    return burst_step(paused, wait, now=now, limit=10.0, threshold=4, routes=2)


def test_a_burst_that_read_nothing_and_has_no_paused_stream_with_unread_entries_is_done() -> None:
    assert _step({}, BurstWait(), 0.0) == BurstStep(done=True)


@pytest.mark.parametrize(
    ("paused", "expected"),
    [
        ({LIVE: 5}, BurstStep(done=False, wait_seconds=POLL_SECONDS)),  # the open stream's read did not wait
        ({LIVE: 5, BACKFILL: 6}, BurstStep(done=False)),  # every read was skipped: the idle wait was the poll
    ],
)
def test_a_burst_waiting_on_paused_queues_polls_unless_it_already_waited(
    paused: dict[_Route, int], expected: BurstStep
) -> None:
    assert _step(paused, BurstWait(), 0.0) == expected


def test_a_burst_stops_and_says_why_when_no_paused_queue_got_shorter_for_its_limit() -> None:
    wait = BurstWait()
    assert not _step({LIVE: 5}, wait, 0.0).done
    assert not _step({LIVE: 5}, wait, 9.9).done
    step = _step({LIVE: 5}, wait, 10.0)
    assert step.done and step.reason is not None
    assert step.reason.startswith(f"queue live holds 5 jobs (> 4, backpressure), {LIVE.stream} unread")
