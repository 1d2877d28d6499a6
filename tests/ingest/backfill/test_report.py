"""The report: its files side (per format counts, skipped and failed files), its verdict, its text."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.backfill.plan import BEFORE_SINCE, MODIFIED_BEFORE_SINCE, NOT_A_LOG
from ingest.backfill.records import FileRecord, FileStatus, RunResult, Sent
from ingest.backfill.report import Verdict, build_report, render, summarize, verdict


def test_summary_counts_formats_and_lists_skipped_and_failed() -> None:
    sent = (Sent("1-0", "o", "p", "e1"), Sent("1-1", "o", "p", "e2"))
    records = [
        FileRecord("/a", 1, 1, FileStatus.IMPORTED, "aider", turns=3, held_back=1, sent=sent),
        FileRecord("/b", 1, 1, FileStatus.IMPORTED, "aider", turns=1, sent=sent[:1], resumed=True),
        FileRecord("/c", 1, 1, FileStatus.PARTIAL, "claude-code", "line 3: bad", turns=2, sent=sent),
        FileRecord("/d", 1, 1, FileStatus.FAILED, "swe-agent", "swe-agent log: truncated"),
        FileRecord("/e", 1, 1, FileStatus.SKIPPED, reason=NOT_A_LOG),
        FileRecord("/f", 1, 1, FileStatus.SKIPPED, reason=NOT_A_LOG),
        FileRecord("/g", 1, 1, FileStatus.SKIPPED, reason=MODIFIED_BEFORE_SINCE),
    ]
    summary = summarize(records)
    assert summary["files"] == {
        "walked": 7, "imported": 2, "partial": 1, "failed": 1, "skipped": 3, "resumed": 1
    }  # fmt: skip
    assert summary["formats"]["aider"] == {"files": 2, "turns": 4, "published": 3, "held_back": 1}
    assert summary["formats"]["claude-code"]["published"] == 2
    assert summary["formats"]["swe-agent"] == {"files": 1, "turns": 0, "published": 0, "held_back": 0}
    assert summary["events"] == {
        "read": 6, "published": 5, "published_by_earlier_runs": 1, "held_back": {BEFORE_SINCE: 1}
    }  # fmt: skip
    assert summary["skipped"][NOT_A_LOG] == {"files": 2, "paths": ["/e", "/f"]}
    assert summary["skipped"][MODIFIED_BEFORE_SINCE]["files"] == 1
    assert [(f["path"], f["status"], f["reason"]) for f in summary["failed"]] == [
        ("/c", "partial", "line 3: bad"),
        ("/d", "failed", "swe-agent log: truncated"),
    ]


def _report(
    *, interrupted: bool = False, pipeline: dict[str, Any] | None = None, failed: bool = False
) -> Any:
    record = FileRecord("/a", 1, 1, FileStatus.PARTIAL if failed else FileStatus.IMPORTED, "aider", "bad")
    run = {
        "interrupted": interrupted,
        "publish_seconds": 1.0,
        "seconds": 1.0,
        "dry_run": False,
        "since": None,
    }
    report = build_report(RunResult([record]), None, run=run)
    report["pipeline"] = pipeline
    return report


_SETTLED = {"settled": True, "processed": 2, "not_processed": 0, "in_failed_jobs": 0}


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (_report(), Verdict.DONE),
        (_report(pipeline=_SETTLED), Verdict.DONE),
        (_report(failed=True), Verdict.PARSE_FAILURES),
        (_report(failed=True, pipeline={**_SETTLED, "settled": False}), Verdict.UNFINISHED),
        (_report(pipeline={**_SETTLED, "in_failed_jobs": 1}), Verdict.UNFINISHED),
        (
            _report(failed=True, interrupted=True, pipeline={**_SETTLED, "settled": False}),
            Verdict.INTERRUPTED,
        ),
    ],
)
def test_the_verdict_is_the_worst_of_what_happened(report: dict[str, Any], expected: Verdict) -> None:
    assert verdict(report) is expected


def test_the_outcome_lines_follow_the_pipeline_line_only_when_waited() -> None:
    lines = ["entries: fixed 2 (2 new, 0 already in the log)"]
    waited = render(_report(pipeline=_SETTLED), outcome_lines=lines).splitlines()
    assert waited[waited.index("pipeline: 2 events processed") + 1] == lines[0]
    assert lines[0] not in render(_report(), outcome_lines=lines)
