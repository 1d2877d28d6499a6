"""The hot path's call and Redis-command budget (``bench/budget.py``, ``bench/budget.json``): counts, not
seconds, so it holds on a loaded machine and fails the suite when a change makes the hot path costlier."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis

from bench.budget import compiled, load_budget, measure, verdicts


def test_the_hot_path_stays_within_its_budget(redis_client: redis.Redis, tmp_path: Path) -> None:
    if compiled():  # mypyc's core makes no Python calls to count; CI installs editable, so pure
        if os.environ.get("CI") == "true":
            pytest.fail("the extraction core is compiled: the budget counts the pure-Python core")
        pytest.skip("the extraction core is compiled: the budget counts the pure-Python core")
    budget = load_budget()
    counts = measure(redis_client, tmp_path / "data")
    assert set(counts) == set(budget["counts"])
    judged = verdicts(counts, budget)
    report = "\n".join(
        f"  {name}: {counts[name]} against a budget of {budget['counts'][name]} -> {judged[name]}"
        for name in counts
    )
    assert all(v == "ok" for v in judged.values()), (
        "the hot path left its budget (over: costlier; under: lower the budget so it keeps guarding).\n"
        f"{report}\nIf worth it, in a commit of its own: python -m bench.budget --write --why '...'"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [(100.0, "ok"), (110.0, "ok"), (110.1, "over"), (121.0, "over"), (80.0, "ok"), (79.9, "under")],
)
def test_a_count_is_over_past_the_tolerance_and_under_past_twice_it(value: float, expected: str) -> None:
    budget = {"tolerance": 0.1, "counts": {"calls": 100.0}}
    assert verdicts({"calls": value}, budget) == {"calls": expected}
