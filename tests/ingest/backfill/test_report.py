"""The report's files side: per format counts, skipped and failed files."""

from __future__ import annotations

from ingest.backfill.plan import BEFORE_SINCE, MODIFIED_BEFORE_SINCE, NOT_A_LOG
from ingest.backfill.records import FileRecord, FileStatus, Sent
from ingest.backfill.report import summarize


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
