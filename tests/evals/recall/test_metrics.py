"""Recall-eval metrics: table tests and properties, values in and values out."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evals.recall.dataset import EntrySpec, ProjectData, ProjectSpec, QuerySpec
from evals.recall.metrics import (
    FLOORS,
    GOALS,
    Observation,
    Thresholds,
    assign_splits,
    expected_stale,
    hit_at,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    score_query,
    shortfalls,
    summarize,
)
from evals.recall.report import build_report


@pytest.mark.parametrize(
    ("ranked", "expected", "rr", "hit1", "hit5", "rec5"),
    [
        ([], {"a"}, 0.0, 0.0, 0.0, 0.0),
        (["a"], {"a"}, 1.0, 1.0, 1.0, 1.0),
        (["x", "a"], {"a"}, 0.5, 0.0, 1.0, 1.0),
        (["x", "y", "z", "a"], {"a", "b"}, 0.25, 0.0, 1.0, 0.5),
        (["x", "y", "z", "w", "v", "a"], {"a"}, 1 / 6, 0.0, 0.0, 0.0),
        (["b", "a"], {"a", "b"}, 1.0, 1.0, 1.0, 1.0),
    ],
)
def test_rank_metrics_table(
    ranked: list[str], expected: set[str], rr: float, hit1: float, hit5: float, rec5: float
) -> None:
    assert reciprocal_rank(ranked, expected) == pytest.approx(rr)
    assert hit_at(ranked, expected, 1) == hit1
    assert hit_at(ranked, expected, 5) == hit5
    assert recall_at(ranked, expected, 5) == pytest.approx(rec5)


@pytest.mark.parametrize(
    ("ranked", "grades", "value"),
    [
        (["a", "b"], {"a": 2, "b": 1}, 1.0),
        (["b", "a"], {"a": 2, "b": 1}, (1 + 3 / 1.5849625) / (3 + 1 / 1.5849625)),
        (["x"], {"a": 2}, 0.0),
        (["x"], {}, 1.0),  # nothing graded: nothing to miss
        (["x", "a"], {"a": 2}, 1 / 1.5849625),
    ],
)
def test_ndcg_table(ranked: list[str], grades: dict[str, int], value: float) -> None:
    assert ndcg_at(ranked, grades, 5) == pytest.approx(value, rel=1e-6)


labels = st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10)


@given(ranked=labels, expected=st.sets(st.sampled_from("abcdefghij"), min_size=1))
def test_rank_metric_properties(ranked: list[str], expected: set[str]) -> None:
    rr = reciprocal_rank(ranked, expected)
    assert 0.0 <= rr <= 1.0
    assert hit_at(ranked, expected, 1) <= hit_at(ranked, expected, 5) <= hit_at(ranked, expected, 10)
    assert (rr > 0) == (hit_at(ranked, expected, len(ranked)) == 1.0)
    assert recall_at(ranked, expected, 1) <= recall_at(ranked, expected, 5) <= recall_at(ranked, expected, 10)
    grades = dict.fromkeys(expected, 2)
    assert 0.0 <= ndcg_at(ranked, grades, 5) <= 1.0 + 1e-9
    assert ndcg_at(sorted(expected), grades, 5) == pytest.approx(1.0)


def _query(qid: str, category: str = "reworded", **fields: Any) -> QuerySpec:
    base: dict[str, Any] = {"id": qid, "category": category, "owner": "o", "project": "p", "text": "t"}
    if category in ("reworded", "regressed", "superseded") and "expected" not in fields:
        base["expected"] = ("a",)
    return QuerySpec.model_validate({**base, **fields})


def test_splits_are_stratified_balanced_and_stable() -> None:
    queries = [_query(f"r{i}") for i in range(7)] + [_query(f"n{i}", "negative-generic") for i in range(4)]
    splits = assign_splits(queries)
    assert splits == assign_splits(list(reversed(queries)))  # order of the files does not matter
    for category in ("reworded", "negative-generic"):
        counts = Counter(splits[q.id] for q in queries if q.category == category)
        assert abs(counts["tune"] - counts["held_out"]) <= 1


def test_pinned_queries_keep_their_half_and_leave_the_others_alone() -> None:
    queries = [_query(f"r{i}") for i in range(7)]
    pinned = [_query(f"p{i}", split="held_out") for i in range(5)]
    splits = assign_splits([*queries, *pinned])
    assert all(splits[q.id] == "held_out" for q in pinned)
    assert {q.id: splits[q.id] for q in queries} == assign_splits(queries)


def test_a_positive_query_is_scored_on_labels_blocks_and_checks() -> None:
    query = _query(
        "q", "regressed", expected=("a", "b"), related=("c",), forbidden=("old",), regressed=("b",)
    )
    obs = Observation(
        ranked=("x", "b", "old", "c"),
        scores=(0.9, 0.8, 0.7, 0.6),
        leaked=("x",),
        flagged_regressed=frozenset(),
        block_labels=("x", "b", "old"),
        stale_checked=3,
        stale_ok=2,
    )
    score = score_query(query, obs, "tune")
    assert (score.rr, score.hit_at_1, score.hit_at_5, score.recall_at_5) == (0.5, 0.0, 1.0, 0.5)
    assert score.abstained is None
    assert (score.leaks, score.forbidden_returned) == (1, 1)
    assert (score.block_lines, score.block_relevant) == (3, 1)
    assert (score.regressed_checked, score.regressed_ok) == (1, 0)  # b came back without its flag


def test_a_probe_is_scored_on_abstention_only() -> None:
    quiet = score_query(_query("n", "negative-generic"), Observation((), ()), "held_out")
    noisy = score_query(
        _query("i", "isolation-owner"), Observation(("a",), (0.4,), block_labels=("a",)), "tune"
    )
    assert quiet.abstained is True and quiet.rr is None and quiet.block_lines == 0
    assert noisy.abstained is False and noisy.block_relevant == 0


def test_summaries_average_over_the_queries_each_metric_applies_to() -> None:
    scores = [
        score_query(_query("p1"), Observation(("a",), (1.0,), block_labels=("a",)), "tune"),
        score_query(_query("p2"), Observation(("x", "a"), (1.0, 0.5), block_labels=("x", "a")), "held_out"),
        score_query(_query("n1", "negative-generic"), Observation((), ()), "tune"),
        score_query(_query("n2", "negative-unrelated"), Observation(("x",), (0.3,), ("x",)), "held_out"),
    ]
    overall = summarize(scores)
    assert (overall.positives, overall.probes) == (2, 2)
    assert overall.mrr == 0.75 and overall.hit_at_1 == 0.5 and overall.hit_at_5 == 1.0
    assert overall.abstention == 0.5 and overall.leaks == 1
    assert (overall.block_lines, overall.block_relevant, overall.block_precision) == (3, 2, 0.6667)
    report = build_report(scores).to_dict()
    assert set(report["splits"]) == {"tune", "held_out"}
    assert report["splits"]["tune"]["mrr"] == 1.0 and report["splits"]["held_out"]["mrr"] == 0.5
    assert report["categories"]["negative-generic"]["mrr"] is None
    assert report["meets_goals"] is False


BARS = Thresholds(mrr=0.88, hit_at_5=0.95, abstention=0.98, leaks=0)  # the table's own bars, not FLOORS


@pytest.mark.parametrize(
    ("mrr", "hit5", "abstention", "leaks", "missed"),
    [
        (0.95, 1.0, 1.0, 0, []),
        (0.84, 1.0, 1.0, 0, ["MRR 0.8400 < 0.88"]),
        (0.95, 0.80, 0.96, 0, ["hit@5 0.8000 < 0.95", "abstention 0.9600 < 0.98"]),
        (0.95, 1.0, 1.0, 2, ["leaks 2 > 0"]),
    ],
)
def test_shortfalls_against_the_floors(
    mrr: float, hit5: float, abstention: float, leaks: int, missed: list[str]
) -> None:
    base = summarize([])
    summary = base.__class__(**{**base.to_dict(), "mrr": mrr, "hit_at_5": hit5, "abstention": abstention})
    summary = summary.__class__(**{**summary.to_dict(), "leaks": leaks})
    assert shortfalls(summary, BARS) == missed


@pytest.mark.parametrize("bars", [FLOORS, GOALS], ids=["floors", "goals"])
def test_figures_exactly_at_the_bars_pass_and_a_hair_under_each_fails(bars: Thresholds) -> None:
    """The comparison is >= (<= for leaks), on whatever the shipped bars are."""
    base = summarize([])
    at = {**base.to_dict(), "mrr": bars.mrr, "hit_at_5": bars.hit_at_5, "abstention": bars.abstention}
    assert shortfalls(base.__class__(**{**at, "leaks": bars.leaks}), bars) == []
    for field in ("mrr", "hit_at_5", "abstention"):
        under = base.__class__(**{**at, "leaks": bars.leaks, field: getattr(bars, field) - 0.001})
        assert len(shortfalls(under, bars)) == 1, field
    assert len(shortfalls(base.__class__(**{**at, "leaks": bars.leaks + 1}), bars)) == 1


def test_a_store_meeting_the_goals_meets_the_floors() -> None:
    """The goals are the aim, the floors the guard: a store that reaches the goals never fails the suite."""
    base = summarize([])
    at_goals = {
        **base.to_dict(),
        "mrr": GOALS.mrr,
        "hit_at_5": GOALS.hit_at_5,
        "abstention": GOALS.abstention,
    }
    assert shortfalls(base.__class__(**{**at_goals, "leaks": GOALS.leaks}), FLOORS) == []


@pytest.mark.parametrize(
    ("commits", "workspace", "commit", "files", "stale"),
    [
        ((), (), "dead", ("gone.py",), False),  # nothing checked, nothing stale
        (("c1",), (), "c1", ("gone.py",), False),
        (("c1",), (), "dead", ("a.py",), True),
        (("c1",), (), None, ("a.py",), False),  # no commit recorded: cannot be gone
        ((), ("a.py",), None, ("a.py", "gone.py"), True),  # one file gone is enough
        ((), ("a.py",), None, ("a.py",), False),
    ],
)
def test_expected_staleness_table(
    commits: tuple[str, ...],
    workspace: tuple[str, ...],
    commit: str | None,
    files: tuple[str, ...],
    stale: bool,
) -> None:
    project = ProjectData(
        ProjectSpec(owner="o", key="p", known_commits=commits, workspace_files=workspace), (), ""
    )
    entry = EntrySpec(label="e", days_ago=1, task="t", outcome="fixed", files=files, commit=commit)
    assert expected_stale(project, entry) is stale
