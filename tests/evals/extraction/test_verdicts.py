"""Agreement of the agent-side outcome with an independent verdict: the Wilson interval and the report."""

from __future__ import annotations

import pytest

from evals.extraction.verdicts import Judged, agreement, wilson


@pytest.mark.parametrize(
    ("k", "n", "interval"),
    [
        (0, 0, None),
        (10, 10, (0.7225, 1.0)),  # Wilson (1927); also R's prop.test without continuity correction
        (77, 100, (0.6785, 0.8416)),  # by hand: centre 0.7600, half-width 0.0816
        (0, 5, (0.0, 0.4345)),
    ],
)
def test_wilson(k: int, n: int, interval: tuple[float, float] | None) -> None:
    assert wilson(k, n) == interval


def _turns(
    fixed_ok: int, fixed_bad: int, partial_ok: int, unverified_ok: int, other: int = 0
) -> list[Judged]:
    rows = [("fixed", True)] * fixed_ok + [("fixed", False)] * fixed_bad
    rows += [("partial", True)] * partial_ok + [("unverified", True)] * unverified_ok
    rows += [("unverified", False)] * other
    return [Judged(f"run-{i}", outcome, resolved) for i, (outcome, resolved) in enumerate(rows)]


def test_fewer_than_100_turns_leave_the_goal_unmeasured() -> None:
    report = agreement(_turns(3, 1, 0, 1))
    assert report["fixed_precision"] == 0.75
    assert report["resolved_labelled_fixed"] == 0.75
    assert report["goal"] == "unmeasured: fewer than 100 turns"


def test_the_goal_is_met_or_not_on_100_turns() -> None:
    met = agreement(_turns(63, 7, 20, 10))
    assert (met["turns"], met["fixed_precision"], met["resolved_labelled_fixed"], met["goal"]) == (
        100, 0.9, 0.6774, "met",
    )  # fmt: skip
    assert agreement(_turns(50, 10, 20, 20))["goal"] == "not met"
    assert met["by_outcome"]["fixed"] == {"turns": 70, "resolved": 63}
