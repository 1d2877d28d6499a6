"""The derived eval entries are what the real extractor makes of the real runs and logs, to the field.

``evals/recall/derive_entries.py`` turns real runner output (``evals/recall/runs``) and real agent logs into
``[[entry]]`` blocks of ``evals/recall/projects/*.toml``. These tests re-run the extractor and fail when
the dataset and the extractor disagree: an extraction change that alters a derived entry must update the
dataset (``python -m evals.recall.derive_entries``) and re-measure recall, not pass silently.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from evals.recall import DATASET, derive_entries
from evals.recall.dataset import EntrySpec, ProjectData, load_dataset
from evals.recall.runs import make_runs

SOURCE_PREFIX = "evals/recall/derive_entries.py"


def _dataset_entries() -> dict[str, tuple[ProjectData, EntrySpec]]:
    dataset = load_dataset(DATASET)
    return {entry.label: (project, entry) for project in dataset.projects for entry in project.entries}


ENTRIES = _dataset_entries()


def test_the_dataset_holds_exactly_the_derived_labels() -> None:
    marked = {label for label, (_, entry) in ENTRIES.items() if entry.source.startswith(SOURCE_PREFIX)}
    assert marked == set(derive_entries.labels())


@pytest.mark.parametrize("label", derive_entries.labels())
def test_a_derived_entry_is_what_the_extractor_makes(label: str) -> None:
    project, spec = ENTRIES[label]
    meta = derive_entries.RUN_TURNS.get(label) or derive_entries.LOG_TURNS[label]
    assert (project.spec.owner, project.spec.key) == (meta.owner, meta.project)
    assert spec.days_ago == meta.days_ago
    written = spec.model_dump(mode="json")
    assert {name: written[name] for name in derive_entries.FIELDS} == derive_entries.entry_fields(
        derive_entries.derived(label)
    )


@pytest.mark.parametrize("label", derive_entries.labels())
def test_the_printed_block_is_the_dataset_entry(label: str) -> None:
    (block,) = tomllib.loads(derive_entries.toml_block(label))["entry"]
    assert EntrySpec.model_validate(block) == ENTRIES[label][1]


@pytest.mark.parametrize("label", list(derive_entries.RUN_TURNS))
def test_run_turns_rest_on_two_recorded_runs_the_first_failing(label: str) -> None:
    manifest = json.loads((derive_entries.RUNS / "manifest.json").read_text())
    assert label in make_runs.CASES
    first, second = manifest[label]
    assert first["exit_code"] != 0
    for step in (1, 2):
        assert (derive_entries.RUNS / f"{label}-{step}.txt").read_text().strip()
    outcome = ENTRIES[label][1].outcome
    assert (second["exit_code"] == 0) == (outcome == "fixed")


def test_the_comparison_sees_a_changed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: a different runner output makes a different entry."""
    label = "pay-refund-amount-string"
    runs = tmp_path / "runs"
    shutil.copytree(derive_entries.RUNS, runs)
    first = runs / f"{label}-1.txt"
    first.write_text(first.read_text().replace("RefundRequest", "PayoutRequest"))
    before = derive_entries.entry_fields(derive_entries.derived(label))
    monkeypatch.setattr(derive_entries, "RUNS", runs)
    after = derive_entries.entry_fields(derive_entries.derived(label))
    assert after["errors"] != before["errors"]
    assert any("PayoutRequest" in error for error in after["errors"])
