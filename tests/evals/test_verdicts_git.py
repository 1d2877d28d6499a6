"""git's verdict rules on the committed real-history data: the figures results/git.json states, and goals."""

from __future__ import annotations

import json

import pytest

from evals.verdicts.score import GOALS, RESULTS, half, load, report, score_reverts, score_squashes
from ingest.verdicts.rules import SquashRule, UndoRule


@pytest.fixture(scope="module")
def measured() -> dict[str, object]:
    return report(load())


def test_results_file_holds_what_the_scoring_gives(measured: dict[str, object]) -> None:
    assert json.loads(RESULTS.read_text(encoding="utf-8")) == measured


def test_held_out_half_meets_the_goals(measured: dict[str, object]) -> None:
    reverts = measured["reverts"]["held_out"]  # type: ignore[index]
    assert reverts["reverts"] >= 50 and len(reverts["repositories"]) >= 3
    assert reverts["recall"] >= GOALS["revert_recall"] and reverts["precision"] >= GOALS["revert_precision"]
    squashes = measured["squashes"]["held_out"]  # type: ignore[index]
    assert squashes["right_share"] >= GOALS["squash_right"]
    assert squashes["wrong_share"] <= GOALS["squash_wrong_max"]


def test_the_scoring_sees_a_weaker_rule(measured: dict[str, object]) -> None:
    repos = load()
    loose_undo = UndoRule(min_coverage=0.1, min_purity=0.0, min_chars=1)
    assert score_reverts(repos, loose_undo, "held_out")["false_alarms"] > 0
    whole = score_squashes(repos, SquashRule(min_containment=1.0), "held_out")["right"]
    assert whole < measured["squashes"]["held_out"]["right"]  # type: ignore[index]
    strict = score_reverts(repos, UndoRule(min_coverage=1.0, min_purity=1.0), "held_out")
    assert strict["recall"] < measured["reverts"]["held_out"]["recall"]  # type: ignore[index]


def test_halves_are_fixed_by_the_sha() -> None:
    assert half("0" * 40) == half("0" * 40) and {half(str(i)) for i in range(20)} == {"tune", "held_out"}
