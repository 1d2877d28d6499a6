"""store.impact: Newcombe's interval against his published table, the power formula against the textbook
value, one outcome per session by assigned arm, follow counts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.entry import FixEntry
from store.impact import (
    HOLDBACK,
    MEMORY,
    SessionOutcome,
    fix_usage,
    newcombe,
    report,
    sessions_needed,
    sessions_of,
    wilson,
)


@pytest.mark.parametrize(
    ("k1", "n1", "k2", "n2", "low", "high"),
    [  # Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (hybrid score)
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
        (5, 56, 0, 29, -0.0381, 0.1926),
        (0, 10, 0, 20, -0.1611, 0.2775),
        (0, 10, 0, 10, -0.2775, 0.2775),
        (10, 10, 0, 20, 0.6791, 1.0000),
    ],
)
def test_newcombe_matches_the_published_table(
    k1: int, n1: int, k2: int, n2: int, low: float, high: float
) -> None:
    lift = newcombe(k1, n1, k2, n2)
    assert lift is not None
    assert (round(lift.low, 4), round(lift.high, 4)) == (low, high)
    assert lift.difference == pytest.approx(k1 / n1 - k2 / n2)


def test_an_empty_arm_has_no_interval() -> None:
    assert newcombe(3, 10, 0, 0) is None and wilson(0, 0) == (0.0, 1.0)


@given(st.integers(0, 200), st.integers(1, 200), st.integers(0, 200), st.integers(1, 200))
def test_the_interval_holds_the_estimate_inside_minus_one_one(k1: int, n1: int, k2: int, n2: int) -> None:
    k1, k2 = min(k1, n1), min(k2, n2)
    lift = newcombe(k1, n1, k2, n2)
    assert lift is not None
    assert -1.0 - 1e-9 <= lift.low <= lift.difference <= lift.high <= 1.0 + 1e-9


def test_sessions_needed_is_the_textbook_two_proportion_size() -> None:
    # 50% vs 60%, equal arms, alpha 0.05 two-sided, power 0.8: 385 per arm (normal approximation)
    assert sessions_needed(0.5, 0.10, 0.5) == 770
    assert sessions_needed(0.5, 0.10, 0.1) > 770  # a small holdback needs more sessions in all
    assert sessions_needed(0.5, 0.0, 0.1) is None and sessions_needed(0.5, 0.1, 0.0) is None


def entry(
    n: int, session: str, arm: str, outcome: str = "fixed", ts: float = 100.0, **extra: Any
) -> FixEntry:
    return FixEntry(
        id=f"fix-{n:016x}", ts=ts, project="p", task="t", files=["a.py"], symbols=[], errors=[], tests=None,
        outcome=outcome, solution="", tags=[], session_id=session,
        recall={"arm": arm, "injected": [{"id": "fix-00000000000000aa"}] if arm == MEMORY else [],
                "shadow": [{"id": "fix-00000000000000aa"}] if arm == HOLDBACK else [],
                "followed": ["fix-00000000000000aa"]},
        **extra,
    )  # fmt: skip


def test_one_outcome_per_session_its_last_turns() -> None:
    entries = [
        entry(1, "s1", MEMORY, "partial", ts=100.0),
        entry(2, "s1", MEMORY, "fixed", ts=200.0),  # s1 ends fixed
        entry(3, "s2", HOLDBACK, "fixed", ts=100.0),
        entry(4, "s2", HOLDBACK, "partial", ts=300.0),  # s2 ends not fixed
        FixEntry(
            id="fix-00000000000000ff",
            ts=1.0,
            project="p",
            task="t",
            files=[],
            symbols=[],
            errors=[],
            tests=None,
            outcome="fixed",
            solution="",
            tags=[],
        ),  # fmt: skip  (no record: not counted)
    ]
    found = {s.session: s for s in sessions_of(entries)}
    assert set(found) == {"s1", "s2"}
    assert (found["s1"].fixed, found["s2"].fixed) == (True, False)
    assert [s.session for s in sessions_of(entries, since=250.0)] == ["s2"]


def test_verdicts_decide_and_the_claim_is_kept() -> None:
    judged = entry(1, "s1", MEMORY, "partial", outcome_source="verdict:ci", agent_outcome="fixed")
    (s,) = sessions_of([judged])
    assert (s.fixed, s.verdict, s.claimed) == (False, False, True)
    (plain,) = sessions_of([entry(2, "s2", MEMORY, "fixed")])
    assert (plain.fixed, plain.verdict, plain.claimed) == (True, None, True)


def test_the_report_counts_each_arm_and_follows() -> None:
    sessions = [
        SessionOutcome("a", "p", MEMORY, 1.0, True, True, True, ("f1", "f2"), ("f1",)),
        SessionOutcome("b", "p", MEMORY, 2.0, False, None, True, ("f1",), ()),
        SessionOutcome("c", "p", HOLDBACK, 3.0, False, False, False, ("f1",), ("f1",)),
    ]
    got = report(sessions)
    memory, holdback = got.arms[MEMORY], got.arms[HOLDBACK]
    assert (memory.sessions, memory.fixed, memory.claimed_fixed, memory.verdict_sessions) == (2, 1, 2, 1)
    assert (memory.shown, memory.followed, memory.follow_rate) == (3, 1, 1 / 3)
    assert (holdback.sessions, holdback.fixed, holdback.follow_rate) == (1, 0, 1.0)
    assert got.lifts["outcome"] is not None and got.lifts["outcome"].difference == pytest.approx(0.5)
    assert got.lifts["claimed"] is not None and got.lifts["claimed"].difference == pytest.approx(1.0)
    usage = {u.entry_id: u for u in fix_usage(sessions)}
    assert (usage["f1"].injected, usage["f1"].shadow, usage["f1"].followed, usage["f1"].followed_fixed) == (
        2,
        1,
        2,
        1,
    )
    assert got.to_dict()["arms"][HOLDBACK]["sessions"] == 1
