"""The rotation decision (pure): tables plus properties."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.entry import FixEntry
from store.persist.rotation import plan_rotation, should_rotate
from tests.store.factories import make_entry


def _log(spec: str) -> list[FixEntry]:
    """``"fpu"`` → entries fixed, partial, unverified with ts 0, 1, 2."""
    outcome = {"f": "fixed", "p": "partial", "u": "unverified"}
    return [make_entry(i, outcome=outcome[c], ts=i) for i, c in enumerate(spec)]  # type: ignore[arg-type]


def _spec(entries: list[FixEntry]) -> str:
    return "".join(e.outcome[0] for e in entries)


@pytest.mark.parametrize(
    ("log", "cap", "kept", "dropped"),
    [
        ("fpu", 3, "fpu", ""),
        ("fpu", 5, "fpu", ""),
        ("fpu", 2, "fp", "u"),
        ("ufu", 2, "fu", "u"),  # the oldest unverified goes first
        ("uufp", 2, "fp", "uu"),
        ("fpfu", 2, "pf", "fu"),  # unverified first, then the oldest of the rest
        ("ffff", 2, "ff", "ff"),
        ("fpu", 0, "", "fpu"),
        ("", 3, "", ""),
    ],
)
def test_plan_rotation_table(log: str, cap: int, kept: str, dropped: str) -> None:
    entries = _log(log)
    plan = plan_rotation(entries, cap)
    assert _spec(plan.keep) == kept
    assert _spec(plan.drop) == dropped


def test_ties_on_ts_go_by_id_whatever_the_order() -> None:
    entries = [make_entry(i, ts=5.0) for i in range(4)]
    by_id = sorted(entries, key=lambda e: e.id)
    for order in (entries, entries[::-1]):
        plan = plan_rotation(order, 2)
        assert {e.id for e in plan.drop} == {e.id for e in by_id[:2]}


def test_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="cap"):
        plan_rotation([], -1)


@pytest.mark.parametrize(("count", "cap", "rotate"), [(0, 0, False), (500, 500, False), (501, 500, True)])
def test_should_rotate(count: int, cap: int, rotate: bool) -> None:
    assert should_rotate(count, cap) is rotate


entries_strategy = st.lists(
    st.tuples(st.sampled_from(["fixed", "partial", "unverified"]), st.floats(0, 1e9)), max_size=40
).map(lambda rows: [make_entry(i, outcome=o, ts=t) for i, (o, t) in enumerate(rows)])  # type: ignore[arg-type]


@given(entries_strategy, st.integers(0, 45))
def test_rotation_invariants(entries: list[FixEntry], cap: int) -> None:
    plan = plan_rotation(entries, cap)
    assert len(plan.keep) <= cap
    assert len(plan.keep) == min(cap, len(entries))
    assert Counter(e.id for e in plan.keep + plan.drop) == Counter(e.id for e in entries)
    position = {e.id: i for i, e in enumerate(entries)}
    assert [position[e.id] for e in plan.keep] == sorted(position[e.id] for e in plan.keep)
    assert [entries[i] for i in plan.kept_rows] == plan.keep  # where each kept entry stood
    if any(e.outcome != "unverified" for e in plan.drop):
        assert all(e.outcome != "unverified" for e in plan.keep)  # no fix dropped while unverified remain
    kept_verified = [e.ts for e in plan.keep if e.outcome != "unverified"]
    dropped_verified = [e.ts for e in plan.drop if e.outcome != "unverified"]
    if kept_verified and dropped_verified:
        assert max(dropped_verified) <= min(kept_verified)  # the oldest go first


@given(entries_strategy, st.integers(0, 45))
def test_rotation_is_idempotent(entries: list[FixEntry], cap: int) -> None:
    once = plan_rotation(entries, cap).keep
    assert plan_rotation(once, cap).keep == once


@given(entries_strategy, st.integers(0, 45), st.randoms())
def test_rotation_depends_on_the_set_not_the_order(
    entries: list[FixEntry], cap: int, rnd: random.Random
) -> None:
    shuffled = list(entries)
    rnd.shuffle(shuffled)
    assert {e.id for e in plan_rotation(shuffled, cap).keep} == {
        e.id for e in plan_rotation(entries, cap).keep
    }


@given(entries_strategy, st.integers(0, 45))
def test_replaying_dropped_entries_drops_them_again(entries: list[FixEntry], cap: int) -> None:
    plan = plan_rotation(entries, cap)
    replay = plan_rotation(plan.keep + plan.drop, cap)
    assert replay.keep == plan.keep
