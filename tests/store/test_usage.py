"""store.usage: the arithmetic of learning from use (tables and properties), the words, the counts from
entries (memory sessions only: holdback shadows are no showings)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.entry import FixEntry
from store.usage import (
    DEFAULT_PARAMS,
    FixUse,
    LearnParams,
    explain,
    from_json,
    learned,
    multiplier,
    to_json,
    usage_of,
)
from tests.store.factories import make_entry

A, B = "fix-00000000000000aa", "fix-00000000000000bb"


@pytest.mark.parametrize(
    ("use", "expected"),
    [  # defaults: low 0.5, high 1.5, prior 3 showings at 0.25; a follow earns 0.5, fixed by a verdict
        # +0.5, fixed by the agent's own tests +0.25. u = (credits + 0.75) / (shown + 3).
        (None, 1.0),
        (FixUse(), 1.0),
        (FixUse(shown=1), 1 - 0.5 * (0.25 - 0.75 / 4) / 0.25),  # 0.875: one showing moves little
        (FixUse(shown=8), 1 - 0.5 * (0.25 - 0.75 / 11) / 0.25),  # 0.636: shown 8 times, never followed
        (FixUse(shown=1, followed=1), 1 + 0.5 * ((1.25 / 4) - 0.25) / 0.75),  # 1.042
        (FixUse(shown=5, followed=5, verdict_fixed=5), 1 + 0.5 * ((5.75 / 8) - 0.25) / 0.75),  # 1.313
        (FixUse(shown=5, followed=5, claimed_fixed=5), 1 + 0.5 * ((4.5 / 8) - 0.25) / 0.75),  # 1.208
        (FixUse(shown=4, followed=1), 1 - 0.5 * (0.25 - 1.25 / 7) / 0.25),  # 0.857
    ],
)
def test_the_multiplier_table(use: FixUse | None, expected: float) -> None:
    assert multiplier(use) == pytest.approx(expected)


def test_verdicts_weigh_more_than_claims_and_claims_more_than_failures() -> None:
    verdict = multiplier(FixUse(shown=3, followed=3, verdict_fixed=3))
    claimed = multiplier(FixUse(shown=3, followed=3, claimed_fixed=3))
    unfixed = multiplier(FixUse(shown=3, followed=3))
    assert verdict > claimed > unfixed > 1.0 > multiplier(FixUse(shown=3))


uses = st.integers(0, 60).flatmap(
    lambda shown: st.integers(0, shown).flatmap(
        lambda followed: st.integers(0, followed).flatmap(
            lambda verdict: st.integers(0, followed - verdict).map(
                lambda claimed: FixUse(shown, followed, verdict, claimed)
            )
        )
    )
)
params = st.builds(
    LearnParams,
    low=st.floats(0.1, 1.0),
    high=st.floats(1.0, 3.0),
    prior=st.floats(0.5, 20.0),
    neutral=st.floats(0.05, 0.95),
    follow_credit=st.floats(0.0, 1.0),
    claimed_credit=st.floats(0.0, 1.0),
)


@given(uses, params)
def test_the_multiplier_stays_within_its_bounds(use: FixUse, p: LearnParams) -> None:
    assert p.low <= multiplier(use, p) <= p.high


@given(uses, params)
def test_one_more_follow_of_the_same_showings_never_lowers_it(use: FixUse, p: LearnParams) -> None:
    if use.followed < use.shown:
        more = FixUse(use.shown, use.followed + 1, use.verdict_fixed, use.claimed_fixed)
        assert multiplier(more, p) >= multiplier(use, p) - 1e-12
    if use.followed > use.verdict_fixed + use.claimed_fixed:  # a follow that ended fixed: not lower
        fixed = FixUse(use.shown, use.followed, use.verdict_fixed + 1, use.claimed_fixed)
        assert multiplier(fixed, p) >= multiplier(use, p) - 1e-12


@given(st.integers(1, 60))
def test_never_followed_sinks_the_more_it_is_shown(shown: int) -> None:
    assert multiplier(FixUse(shown=shown + 1)) < multiplier(FixUse(shown=shown)) < 1.0


@pytest.mark.parametrize(
    ("use", "text"),
    [
        (None, None),
        (FixUse(), None),
        (FixUse(shown=1), "shown once, never followed"),
        (FixUse(shown=8), "shown 8 times, never followed"),
        (FixUse(shown=5, followed=3, claimed_fixed=3), "followed 3 of 5 times, sessions fixed"),
        (FixUse(shown=1, followed=1, verdict_fixed=1), "followed 1 of 1 time, session fixed (by a verdict)"),
        (FixUse(4, 2, 1, 0), "followed 2 of 4 times, 1 session fixed (by a verdict)"),
        (FixUse(4, 3, 1, 1), "followed 3 of 4 times, 2 sessions fixed (1 by a verdict)"),
        (FixUse(shown=4, followed=2), "followed 2 of 4 times, sessions not fixed"),
    ],
)  # fmt: skip
def test_the_use_in_words(use: FixUse | None, text: str | None) -> None:
    assert explain(use) == text


@pytest.mark.parametrize(
    "counts", [(1, 2, 0, 0), (3, 1, 1, 1), (-1, 0, 0, 0), (2, 1, -1, 0)]
)  # followed > shown, fixed > followed, negatives
def test_inconsistent_counts_are_refused(counts: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError, match="usage counts"):
        FixUse(*counts)


def test_parameters_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="learning"):
        LearnParams(low=1.2)
    with pytest.raises(ValueError, match="learning"):
        LearnParams(neutral=1.0)


def _turn(n: int, session: str, arm: str, shown: list[str], followed: list[str], **extra: Any) -> FixEntry:
    key = "injected" if arm == "memory" else "shadow"
    record = {"arm": arm, key: [{"id": i} for i in shown], "followed": followed}
    return make_entry(n, session_id=session, recall=record, **extra)


def test_usage_counts_memory_sessions_by_their_last_turn_and_ignores_holdback() -> None:
    entries = [
        _turn(1, "s1", "memory", [A], [], ts=1.0),
        _turn(2, "s1", "memory", [A, B], [A], ts=2.0),  # s1's last turn: A followed, B not
        _turn(3, "s2", "memory", [A], [], outcome="partial", ts=3.0),
        _turn(4, "s3", "holdback", [A, B], [], ts=4.0),  # shadow: never a showing
        _turn(5, "s4", "memory", [B], [B], outcome="partial", ts=5.0,
              outcome_source="verdict:ci", agent_outcome="fixed"),  # a verdict said not fixed
        make_entry(6),  # no record
    ]  # fmt: skip
    assert usage_of(entries) == {A: FixUse(2, 1, 0, 1), B: FixUse(2, 1, 0, 0)}
    assert usage_of([entries[3]]) == {}


def test_a_verdict_fixed_session_counts_as_verdict_backed() -> None:
    judged = _turn(1, "s", "memory", [A], [A], outcome_source="verdict:ci", agent_outcome="partial")
    assert usage_of([judged]) == {A: FixUse(1, 1, 1, 0)}


def test_the_json_form_reads_back_and_refuses_others() -> None:
    usage = {A: FixUse(3, 2, 1, 1), B: FixUse(1)}
    assert from_json(to_json(usage)) == usage
    for bad in (
        {},
        {"v": 2, "fixes": {}},
        {"v": 1, "fixes": {A: [1, 2]}},
        {"v": 1, "fixes": {A: [1, 2, 0, 0]}},
    ):
        with pytest.raises(ValueError):
            from_json(bad)


def test_learned_is_none_when_no_fix_of_the_view_was_shown() -> None:
    assert learned(["fix-0000000000000001"], {A: FixUse(3)}) is None
    found = learned([A, "fix-0000000000000001"], {A: FixUse(3)})
    assert found is not None
    assert list(found.factors) == [multiplier(FixUse(3)), 1.0]
    assert DEFAULT_PARAMS.low < found.factors[0] < 1.0
