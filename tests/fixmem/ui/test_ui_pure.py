"""The web UI's pure parts: entry filters and paging, the outcome chart, sessions and CSRF tokens."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixmem.ui.chart import HEIGHT, WIDTH, bucket_counts, outcome_chart, svg
from fixmem.ui.listing import extras
from fixmem.ui.session import Sessions, csrf_matches
from store import FixEntry
from store.summary import summarize
from tests.fixmem.ui.conftest import DAY, T0, make_entry


def test_extra_fields_come_in_a_stable_order_and_shape() -> None:
    entry = make_entry(
        "a", "p", 1, "t", zeta="z", changes=["a.py: x"], judge_verdict={"ok": True}, outcome_source="tests",
        gone=None,
    )  # fmt: skip
    shown = extras(entry)
    assert [x.name for x in shown] == ["changes", "outcome_source", "judge_verdict", "zeta"]
    assert shown[0].lines == ("a.py: x",) and shown[1].text == "tests"
    assert shown[2].text == '{\n  "ok": true\n}'


def test_buckets_split_the_days_evenly_and_keep_every_entry() -> None:
    days = {10: (1, 0, 0), 12: (0, 1, 0), 13: (1, 0, 1)}  # fixed, partial, unverified
    assert bucket_counts(days, 2) == [
        (10, 11, {"fixed": 1, "partial": 0, "unverified": 0}),
        (12, 13, {"fixed": 1, "partial": 1, "unverified": 1}),
    ]
    assert bucket_counts(days, 12) == [  # fewer days than buckets: a bar a day
        (10, 10, {"fixed": 1, "partial": 0, "unverified": 0}),
        (11, 11, {"fixed": 0, "partial": 0, "unverified": 0}),
        (12, 12, {"fixed": 0, "partial": 1, "unverified": 0}),
        (13, 13, {"fixed": 1, "partial": 0, "unverified": 1}),
    ]
    assert [(a, b) for a, b, _ in bucket_counts({0: (1, 0, 0), 9: (1, 0, 0)}, 3)] == [(0, 3), (4, 6), (7, 9)]
    assert bucket_counts({3: (1, 1, 0)}, 12) == [(3, 3, {"fixed": 1, "partial": 1, "unverified": 0})]
    assert bucket_counts({}, 12) == []


@given(
    st.dictionaries(
        st.integers(0, 40_000), st.tuples(*[st.integers(0, 5)] * 3).filter(any), min_size=1, max_size=60
    ),
    st.integers(1, 12),
)
def test_spans_tile_the_days_and_keep_every_entry(days: dict[int, tuple[int, ...]], buckets: int) -> None:
    spans = bucket_counts(days, buckets)
    assert spans[0][0] == min(days) and spans[-1][1] == max(days)
    assert all(a <= b for a, b, _ in spans)
    assert all(b + 1 == c for (_, b, _), (c, _, _) in pairwise(spans))
    for first, last, counts in spans:
        inside = [n for d, n in days.items() if first <= d <= last]
        assert sum(counts.values()) == sum(map(sum, inside))


@given(
    st.lists(st.tuples(st.floats(0, 1e9), st.sampled_from(["fixed", "partial", "unverified"])), min_size=1)
)
def test_every_bar_is_full_height_and_inside_the_box(pairs: list[tuple[float, str]]) -> None:
    entries = [
        make_entry("a", "p", i, "t", outcome=outcome).model_copy(update={"ts": ts})
        for i, (ts, outcome) in enumerate(pairs)
    ]
    chart = outcome_chart(summarize(entries).days)
    assert chart is not None
    assert sum(b.total for b in chart.bars) == len(pairs)
    for bar in chart.bars:
        assert bar.x >= 0 and bar.x + bar.width <= WIDTH + 1e-6
        if bar.total:
            assert abs(sum(s.height for s in bar.segments) - HEIGHT) < 0.05
            assert all(0 <= s.y <= HEIGHT for s in bar.segments)
            assert f"{bar.total} entr" in bar.title


def test_no_chart_without_entries() -> None:
    assert outcome_chart({}) is None
    one = outcome_chart(summarize([make_entry("a", "p", 1, "t")]).days)
    assert one is not None and len(one.bars) == 1 and one.first == one.last


def test_sessions_expire_end_and_are_bounded() -> None:
    now = [T0]
    sessions = Sessions(ttl=DAY, limit=2, clock=lambda: now[0])
    first = sessions.start("alice", None)
    viewer = sessions.viewer(first)
    assert viewer is not None and viewer.owner == "alice" and not viewer.is_ops and viewer.csrf
    second, third = sessions.start(None, "oncall"), sessions.start("bob", "oncall")
    assert sessions.viewer(first) is None and len(sessions) == 2  # the oldest went
    assert sessions.viewer(second).is_ops  # type: ignore[union-attr]
    sessions.end(third)
    assert sessions.viewer(third) is None
    now[0] += DAY
    assert sessions.viewer(second) is None
    assert sessions.viewer(None) is None and sessions.viewer("x" * 500) is None


@pytest.mark.parametrize(
    ("expected", "given", "ok"),
    [
        ("abc", "abc", True),
        ("abc", "abd", False),
        ("abc", "", False),
        (None, "abc", False),
        ("abc", None, False),
    ],
)
def test_csrf_matches(expected: str | None, given: str | None, ok: bool) -> None:
    assert csrf_matches(expected, given) is ok


def test_the_drawn_chart_has_a_path_per_outcome_and_a_title_line_per_bar() -> None:
    entries = [
        make_entry("a", "p", n, "t", outcome=o) for n, o in [(0, "fixed"), (12, "partial"), (23, "fixed")]
    ]
    drawn = str(svg(outcome_chart(summarize(entries).days)))
    assert drawn.count("<path") == 3 and 'class="o-none"' in drawn  # fixed, partial, empty buckets
    assert 'class="o-unverified"' not in drawn
    assert (
        "<title>2025-10-09 to 2025-10-10: 1 entry: fixed 1 (100%)\n"
        "2025-10-21 to 2025-10-22: 1 entry: partial 1 (100%)\n"
        "2025-10-31 to 2025-11-01: 1 entry: fixed 1 (100%)</title>"
    ) in drawn
    assert str(svg(None)) == ""


def test_a_field_fixentry_declares_later_is_shown_too() -> None:
    """[fix-content] may declare ``changes`` or a verdict on ``FixEntry`` instead of leaving them extra."""

    class Later(FixEntry):
        verdict: str | None = None
        changes: list[str] | None = None

    entry = Later.model_validate({**make_entry("a", "p", 1, "t").model_dump(), "verdict": "held"})
    assert [(x.name, x.text) for x in extras(entry)] == [("verdict", "held")]


def test_extra_fields_read_as_words_and_a_verdict_as_a_sentence() -> None:
    """The entry page once showed ``outcome_source`` and a verdict as JSON with a unix ts."""
    verdict = {"source": "ci", "outcome": "fixed", "ts": 1789381800.0, "detail": "https://ci/runs/7"}
    entry = make_entry(
        "a", "p", 1, "t", verdict=verdict, outcome_source="verdict:ci", agent_outcome="partial",
        run_notes={"k": 1},
    )  # fmt: skip
    shown = {x.name: x for x in extras(entry)}
    assert shown["verdict"].label == "Verdict"
    assert shown["verdict"].text == "fixed, from ci, on 2026-09-14 10:30 UTC: https://ci/runs/7"
    assert shown["outcome_source"].label == "Outcome decided by"
    assert shown["outcome_source"].text == "a verdict from ci"
    assert shown["agent_outcome"].text == "partial"
    assert shown["run_notes"].label == "Run notes"  # a field fixmem does not know: its name in words
    assert shown["run_notes"].text == '{\n  "k": 1\n}'
    agent = {x.name: x for x in extras(make_entry("b", "p", 1, "t", outcome_source="agent-tests"))}
    assert agent["outcome_source"].text == "the agent's own tests, after its last edit"
