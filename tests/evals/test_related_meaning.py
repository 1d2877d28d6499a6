"""The meaning experiment of ``evals.related.meaning``: its rebuilt shipped answer, its policies and its
rule for "moves the figures" (pure: no model needed)."""

from __future__ import annotations

import numpy as np
import pytest

from evals.related.learn import shipped_answer
from evals.related.meaning import CLEARLY, Query, moves, policy


def _query(strength: list[float], cosine: list[float]) -> Query:
    return Query("start", np.array(strength), {"task": np.array(cosine)}, ["a", "b", "c"][: len(strength)],
                 frozenset({"a"}), frozenset({"a"}), [])  # fmt: skip


@pytest.mark.parametrize(
    ("strength", "expected"),
    [
        ([2.0, 1.5, 0.2], [0, 1]),  # over the floor, best first
        ([1.0, 0.8, 0.2], [0, 1]),  # the runner-up under the floor, close to the best
        ([0.9, 0.8, 0.2], []),  # nothing over the floor: quiet
        ([], []),
    ],
)
def test_shipped_answer_is_ranks_gate_floor_and_runner_up(strength: list[float], expected: list[int]) -> None:
    value = np.array(strength)
    assert shipped_answer(value, value) == expected


def test_rescue_answers_only_where_the_shipped_answer_is_quiet() -> None:
    rescue = policy("rescue", "task", {"s": 0.7, "t": 0.6, "n": 2.0})
    assert rescue(_query([0.9, 0.8, 0.2], [0.7, 0.5, 0.9])) == [0]  # the weak third is too weak
    assert rescue(_query([1.5, 0.8, 0.2], [0.0, 0.0, 0.9])) == [0]  # shipped answered: kept as is
    assert policy("veto", "task", {"t": 0.5})(_query([2.0, 1.5, 0.2], [0.4, 0.6, 0.0])) == [1]


def test_moves_needs_more_hits_at_the_precision_or_clearly_more_precision() -> None:
    base = {"hit_fn": 10, "precision": 0.5, "off_topic_quiet": 9}
    assert moves({**base, "hit_fn": 11}, base)
    assert not moves({**base, "hit_fn": 11, "precision": 0.49}, base)
    assert moves({**base, "precision": 0.5 + CLEARLY}, base)
    assert not moves({**base, "precision": 0.51}, base)
    assert not moves({**base, "hit_fn": 12, "off_topic_quiet": 8}, base)  # an off-topic probe answered
