"""The recall eval end to end: the shipped dataset appended into a real store and every query asked."""

from __future__ import annotations

import orjson
import pytest

from evals.recall import DATASET
from evals.recall.dataset import CATEGORY_KINDS, load_dataset
from evals.recall.metrics import FLOORS, shortfalls
from evals.recall.report import RecallReport
from evals.recall.run import BuiltEval, build_stores, evaluate


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltEval:
    return build_stores(load_dataset(DATASET), tmp_path_factory.mktemp("eval"))


@pytest.fixture(scope="module")
def report(built: BuiltEval) -> RecallReport:
    return evaluate(built)


def test_recall_quality_stays_above_the_floors(report: RecallReport) -> None:
    """The guard: a ranking change that hurts recall quality cannot land silently."""
    missed = shortfalls(report.overall, FLOORS)
    assert not missed, "recall quality fell under the floors: " + "; ".join(missed) + " (run: fixmem eval)"


def test_the_eval_never_leaks_across_owners_or_projects(report: RecallReport) -> None:
    assert report.overall.leaks == 0
    for category in ("isolation-project", "isolation-owner"):
        assert report.categories[category].abstention == 1.0, category


def test_regressed_fixes_are_flagged_and_stale_lines_marked(report: RecallReport) -> None:
    flagged, checked = map(int, report.overall.regressed_flagged.split("/"))
    assert checked >= 4 and flagged == checked
    right, lines = map(int, report.overall.stale_marked.split("/"))
    assert lines > 0 and right == lines
    assert report.categories["stale"].hit_at_5 == 1.0  # stale entries are marked, never dropped


def test_the_store_reconciles_exactly_the_near_duplicates_the_dataset_names(report: RecallReport) -> None:
    """A false merge hides a live fix from every query; a missed one shows a superseded attempt."""
    assert report.info["superseded_by_store"] == report.info["superseded_expected"]
    assert len(report.info["superseded_expected"]) == 4


def test_the_report_covers_every_category_and_both_halves(report: RecallReport) -> None:
    as_json = orjson.loads(orjson.dumps(report.to_dict()))
    assert set(as_json["categories"]) == set(CATEGORY_KINDS)
    total = len(report.queries)
    assert total >= 137
    assert as_json["splits"]["tune"]["queries"] + as_json["splits"]["held_out"]["queries"] == total
    assert len(as_json["queries"]) == total
