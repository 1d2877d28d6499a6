"""``fixmem eval-extraction`` on the real agent logs kept in tests/fixtures/agent-logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.extraction.score import ExtractionReport, _composite_proven, evaluate_event
from fixmem.cli import main
from ingest.importers import import_file
from ingest.schema import ToolEvent

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "agent-logs"
LABELS = LOGS / "labels.json"


def test_report_on_real_logs_meets_the_goals(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval-extraction", str(LOGS), "--labels", str(LABELS), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    totals = report["totals"]
    formats = {i["format"] for i in report["instances"]}
    assert formats == {"mini-swe-agent", "swe-agent", "openhands"}
    assert totals["instances"] >= 8
    assert totals["files_precision"] >= 0.95 and totals["files_recall"] >= 0.95
    assert totals["files_precision_without_final_diff"] >= 0.95
    assert totals["files_recall_without_final_diff"] >= 0.95
    assert totals["errors"] > 0 and totals["errors_with_provenance"] == totals["errors"]
    assert totals["outcome_labelled"] == totals["instances"]
    assert totals["outcome_agree"] == totals["outcome_labelled"]


def test_text_report_names_every_instance(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval-extraction", str(LOGS / "swe-agent"), "--labels", str(LABELS)]) == 0
    out = capsys.readouterr().out
    assert "6e44b9__sweagenttestrepo-1c2844" in out and "TOTAL 3 instances" in out


def test_the_report_catches_a_wrong_file_list_and_an_invented_error() -> None:
    imported = import_file(LOGS / "swe-agent" / "6e44b9__sweagenttestrepo-1c2844.traj", owner="o")
    event = imported.events[0]
    wrong_patch = "diff --git a/other.py b/other.py\n--- a/other.py\n+++ b/other.py\n@@ -1 +1 @@\n-a\n+b\n"
    report = evaluate_event(event, wrong_patch, source="x", fmt="swe-agent", labels={})
    assert report.precision == 0.0 and report.recall == 0.0
    run = ToolEvent(tool="bash", input={"command": "python x.py"}, output="KeyError: 'k'", exit_code=1)
    with_error = event.model_copy(update={"tool_events": [*event.tool_events, run]})
    labels = {"6e44b9__sweagenttestrepo-1c2844": {"outcome": "fixed"}}
    report = evaluate_event(with_error, wrong_patch, source="x", fmt="swe-agent", labels=labels)
    assert report.errors == ["KeyError: 'k'"] and report.errors_unproven == []
    assert report.outcome == "unverified" and report.outcome_label == "fixed"  # shown as a mismatch
    assert not _composite_proven("KeyError: 'invented'", [run.output], "")
    assert _composite_proven(
        "thread 't' panicked at src/a.rs: boom", ["thread 't' panicked at src/a.rs:1:2:\nboom"], ""
    )


def test_totals_split_structured_formats_from_bash_only_live_turns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["eval-extraction", str(LOGS), "--json"]) == 0
    totals = json.loads(capsys.readouterr().out)["totals"]
    structured, live = totals["structured"], totals["bash_only_live"]
    assert structured["instances"] + live["runs"] == totals["instances"]
    assert live["runs"] == 3  # the mini-swe-agent fixtures
    assert (structured["files_precision"], structured["files_recall"]) == (1.0, 1.0)
    assert main(["eval-extraction", str(LOGS)]) == 0
    out = capsys.readouterr().out
    assert (
        f"structured-tool formats, {structured['instances']} instances" in out
        and "bash-only formats as live turns" in out
    )


def test_a_bash_only_edit_seen_only_in_the_final_diff_counts_as_missed_live() -> None:
    imported = import_file(LOGS / "mini-swe-agent" / "django__django-16255.traj.json", owner="o")
    patch = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n"
    events = [
        ToolEvent(tool="bash", input={"command": "cat src/a.py"}, output="a\n", exit_code=0),
        ToolEvent(tool="bash", input={"command": "git diff"}, output=patch, exit_code=0),
    ]
    event = imported.events[0].model_copy(update={"tool_events": events})
    report = evaluate_event(event, patch, source="x", fmt="mini-swe-agent", labels={})
    assert report.recall == 1.0  # the full turn: the diff names the file
    assert report.live is not None and report.live.expected == ["src/a.py"] and report.live.found == []
    totals = ExtractionReport(instances=[report]).totals()
    assert totals["bash_only_live"]["recall"] == 0.0 and totals["structured"]["instances"] == 0
