"""Ranking order and abstention (pure): signal tables in, ordered rows out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.recall.ranking import DEFAULT_WEIGHTS, OUTCOME_CODES, RankingWeights, Signals, rank, relevance


def _signals(rows: list[tuple[float, float, float, float, float]]) -> Signals:
    """One (jaccard, coverage, files, errors, cosine) tuple per entry."""
    cols = np.array(rows, dtype=np.float64).reshape(len(rows), 5).T
    return Signals(*cols)


def _rank(
    rows: list[tuple[float, float, float, float, float]],
    *,
    outcomes: list[str] | None = None,
    regressed: list[bool] | None = None,
    live: list[bool] | None = None,
    ts: list[float] | None = None,
    k: int = 5,
    weights: RankingWeights = DEFAULT_WEIGHTS,
) -> list[int]:
    n = len(rows)
    ranked = rank(
        _signals(rows),
        live=np.array(live if live is not None else [True] * n),
        outcome_codes=np.array([OUTCOME_CODES[o] for o in (outcomes or ["fixed"] * n)], dtype=np.int64),
        regressed=np.array(regressed if regressed is not None else [False] * n),
        ts=np.array(ts if ts is not None else list(range(n)), dtype=np.float64),
        k=k,
        now=1e6,
        weights=weights,
    )
    return [row for row, _ in ranked]


STRONG = (0.6, 1.0, 0.0, 0.0, 0.9)
MEDIUM = (0.3, 0.6, 0.0, 0.0, 0.5)
WEAK = (0.05, 0.2, 0.0, 0.0, 0.15)
NOTHING = (0.0, 0.0, 0.0, 0.0, 0.05)


@pytest.mark.parametrize(
    ("rows", "kwargs", "order"),
    [
        ([WEAK, STRONG, MEDIUM], {}, [1, 2]),  # best first; the weak one is not relevant
        ([NOTHING, WEAK], {}, []),  # abstain: nothing clears the minimum
        ([], {}, []),
        ([STRONG, STRONG], {"ts": [10.0, 20.0]}, [1, 0]),  # exact tie: newer first
        ([STRONG, STRONG], {"live": [False, True]}, [1]),  # superseded entries never come back
        ([STRONG, STRONG], {"regressed": [True, False]}, [1, 0]),  # a fix that held beats one that did not
        ([STRONG, MEDIUM], {"regressed": [True, False]}, [1, 0]),
        ([STRONG, STRONG], {"outcomes": ["unverified", "fixed"]}, [1, 0]),
        ([STRONG, STRONG, STRONG], {"k": 2, "ts": [1.0, 3.0, 2.0]}, [1, 2]),
        ([STRONG], {"k": 0}, []),
        ([(0.0, 0.0, 1.0, 1.0, 0.0)], {}, [0]),  # same file and same error, no shared words
        ([(0.0, 0.0, 1.0, 0.0, 0.0)], {}, []),  # a shared file alone is not enough
    ],
)
def test_rank_table(
    rows: list[tuple[float, float, float, float, float]], kwargs: dict[str, Any], order: list[int]
) -> None:
    assert _rank(rows, **kwargs) == order


def test_weights_are_one_place_and_can_be_passed_in() -> None:
    strict = RankingWeights(min_score=10.0)
    assert _rank([STRONG], weights=strict) == []
    lenient = RankingWeights(min_score=0.0)
    assert _rank([NOTHING], weights=lenient) == [0]


def test_recency_decay_is_opt_in() -> None:
    rows = [STRONG, MEDIUM]
    ts = [0.0, 1e6]  # the strong one is ~11.6 days old at now=1e6
    assert _rank(rows, ts=ts) == [0, 1]
    assert _rank(rows, ts=ts, weights=RankingWeights(recency_half_life_days=1.0)) == [1, 0]


signal = st.floats(0.0, 1.0)


@given(
    st.lists(st.tuples(signal, signal, signal, signal, st.floats(-1.0, 1.0)), max_size=30), st.integers(0, 8)
)
def test_rank_properties(rows: list[tuple[float, float, float, float, float]], k: int) -> None:
    def ranked_with(weights: RankingWeights) -> list[tuple[int, float]]:
        return rank(
            _signals(rows),
            live=np.ones(len(rows), dtype=bool),
            outcome_codes=np.zeros(len(rows), dtype=np.int64),
            regressed=np.zeros(len(rows), dtype=bool),
            ts=np.arange(len(rows), dtype=np.float64),
            k=k,
            now=0.0,
            weights=weights,
        )

    ranked = ranked_with(replace(DEFAULT_WEIGHTS, runner_up_floor=0.0))
    rel = relevance(_signals(rows)) if rows else np.zeros(0)
    assert len(ranked) <= k
    assert all(rel[row] >= DEFAULT_WEIGHTS.min_score for row, _ in ranked)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    expected = min(k, int((rel >= DEFAULT_WEIGHTS.min_score).sum()))
    assert len(ranked) == expected
    # with the runner-up: the same fixes plus at most one below the floor, never when none passed it
    with_runner_up = ranked_with(DEFAULT_WEIGHTS)
    below = [row for row, _ in with_runner_up if rel[row] < DEFAULT_WEIGHTS.min_score]
    assert len(below) <= 1 and len(with_runner_up) <= k
    assert not below or expected > 0
    assert {row for row, _ in ranked} <= {row for row, _ in with_runner_up} or len(with_runner_up) == k
    for row in below:  # the second strongest, close to the floor and to the best
        assert rel[row] >= DEFAULT_WEIGHTS.runner_up_floor * DEFAULT_WEIGHTS.min_score - 1e-9
        assert rel[row] >= DEFAULT_WEIGHTS.runner_up_ratio * rel.max() - 1e-9
        assert int((rel > rel[row]).sum()) == 1


BEST = (0.2, 0.4, 0.0, 0.0, 0.3)  # strength ~1.23
NEAR = (0.15, 0.3, 0.0, 0.0, 0.2)  # strength ~0.90: under the floor, above 0.8 and 0.7 of BEST's


@pytest.mark.parametrize(
    ("rows", "weights", "order"),
    [
        ([BEST, NEAR], DEFAULT_WEIGHTS, [0, 1]),  # the runner-up comes along with a fix that passed
        ([NEAR, BEST, NEAR], DEFAULT_WEIGHTS, [1, 2]),  # only one runner-up (the newer of a tie)
        ([NEAR], DEFAULT_WEIGHTS, []),  # nothing passed the floor: still quiet
        ([STRONG, NEAR], DEFAULT_WEIGHTS, [0]),  # under 0.7 of the best's strength
        ([BEST, WEAK], DEFAULT_WEIGHTS, [0]),  # under 0.8 of the floor
        ([BEST, NEAR], RankingWeights(runner_up_floor=0.0), [0]),  # off
    ],
)
def test_the_runner_up(
    rows: list[tuple[float, float, float, float, float]], weights: RankingWeights, order: list[int]
) -> None:
    assert _rank(rows, weights=weights) == order
