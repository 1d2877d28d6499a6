"""A backfill's report, publish side, pure: the JSON value, the verdict (what the exit code says), the text.

``build_report`` gathers the files side (``summarize``: per format files/turns/published, skipped and failed
files), the throughput, and where the events are in the pipeline when it was waited for; what the events
became in the fix log (``workers.backfill_outcomes``) is handed in as JSON and its lines as text, since
ingest reads no fix log.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from ingest.backfill.plan import BEFORE_SINCE
from ingest.backfill.records import Drain, FileRecord, FileStatus, RunResult

__all__ = ["Verdict", "build_report", "render", "summarize", "verdict"]


class Verdict(StrEnum):
    """How a backfill ended, worst first (the CLI maps each to a named exit code)."""

    INTERRUPTED = "interrupted"  # run it again to resume
    UNFINISHED = "unfinished"  # the wait ended before the pipeline processed everything, or a job failed
    PARSE_FAILURES = "parse_failures"  # some files could not be parsed; the rest was backfilled
    DONE = "done"


def summarize(records: Iterable[FileRecord]) -> dict[str, Any]:
    """The file side of the final report: per format files/turns/published, skipped and failed files."""
    formats: dict[str, Counter[str]] = {}
    statuses: Counter[str] = Counter()
    skipped: dict[str, list[str]] = {}
    failed: list[dict[str, Any]] = []
    events: Counter[str] = Counter()
    resumed = 0
    for record in records:
        statuses[record.status.value] += 1
        resumed += record.resumed
        if record.status is FileStatus.SKIPPED:
            skipped.setdefault(record.reason, []).append(record.path)
            continue
        if record.status in {FileStatus.FAILED, FileStatus.PARTIAL}:
            failed.append(
                {
                    "path": record.path,
                    "format": record.format,
                    "status": record.status.value,
                    "reason": record.reason,
                    "turns_read": record.turns,
                }
            )
        row = formats.setdefault(record.format or "unknown", Counter())
        row["files"] += 1
        row["turns"] += record.turns
        row["published"] += len(record.sent)
        row["held_back"] += record.held_back
        events["read"] += record.turns
        events["published"] += len(record.sent)
        events["resumed"] += len(record.sent) if record.resumed else 0
        events[BEFORE_SINCE] += record.held_back
    return {
        "files": {
            "walked": sum(statuses.values()),
            **{s.value: statuses[s.value] for s in FileStatus},
            "resumed": resumed,
        },
        "formats": {name: dict(row) for name, row in sorted(formats.items())},
        "events": {
            "read": events["read"],
            "published": events["published"],
            "published_by_earlier_runs": events["resumed"],  # of ``published``: resumed files' events
            "held_back": {BEFORE_SINCE: events[BEFORE_SINCE]},
        },
        "skipped": {
            reason: {"files": len(paths), "paths": paths} for reason, paths in sorted(skipped.items())
        },
        "failed": failed,
    }


def build_report(
    result: RunResult,
    drain: Drain | None,
    *,
    run: dict[str, Any],
    outcomes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The final report as a JSON value (files side, throughput, and the pipeline side when waited).

    ``outcomes``: what the events became in the fix log, merged into the pipeline side.
    """
    report: dict[str, Any] = {"run": run, **summarize(result.records)}
    seconds = max(1e-6, run["publish_seconds"])
    read = [r for r in result.records if not r.resumed]
    report["throughput"] = {
        "files_per_s": round(len(read) / seconds, 1),
        "events_per_s": round(sum(len(r.sent) for r in read) / seconds, 1),
        "mb_per_s": round(result.bytes_read / 1e6 / seconds, 2),
    }
    if drain is None:
        report["pipeline"] = None
    else:
        report["pipeline"] = {
            "settled": drain.settled,
            "processed": drain.processed,
            "not_processed": len(drain.unread | drain.pending | drain.queued),
            "in_failed_jobs": len(drain.failed),
            **(outcomes or {}),
        }
    return report


def verdict(report: dict[str, Any]) -> Verdict:
    """How the backfill of ``report`` ended."""
    pipeline = report["pipeline"]
    if report["run"]["interrupted"]:
        return Verdict.INTERRUPTED
    if pipeline is not None and (not pipeline["settled"] or pipeline["in_failed_jobs"]):
        return Verdict.UNFINISHED
    if report["failed"]:
        return Verdict.PARSE_FAILURES
    return Verdict.DONE


def render(report: dict[str, Any], *, outcome_lines: Sequence[str] = ()) -> str:
    """The report as text for a terminal; ``outcome_lines`` follow the pipeline line (when waited)."""
    run, files, events = report["run"], report["files"], report["events"]
    resumed = f" ({files['resumed']} done by an earlier run)" if files["resumed"] else ""
    lines = [
        f"{'dry run: ' if run['dry_run'] else ''}backfill of {files['walked']} files in "
        f"{run['seconds']:.1f}s: {files['imported']} imported, {files['partial']} partly, "
        f"{files['failed']} failed, {files['skipped']} skipped{resumed}",
        f"{'format':<16}{'files':>7}{'turns':>8}{'published':>11}{'held back':>11}",
    ]
    for name, row in report["formats"].items():
        lines.append(
            f"{name:<16}{row['files']:>7}{row['turns']:>8}{row['published']:>11}{row['held_back']:>11}"
        )
    throughput = report["throughput"]
    lines.append(
        f"events: {events['read']} read, {events['published']} "
        f"{'would be published' if run['dry_run'] else 'published'}"
        + (f", {events['held_back'][BEFORE_SINCE]} before --since" if run["since"] else "")
        + f" ({throughput['files_per_s']} files/s, {throughput['events_per_s']} events/s, "
        f"{throughput['mb_per_s']} MB/s)"
    )
    pipeline = report["pipeline"]
    if pipeline is not None:
        lines.append(
            f"pipeline: {pipeline['processed']} events processed"
            + (f", {pipeline['not_processed']} still on their way" if pipeline["not_processed"] else "")
            + (f", {pipeline['in_failed_jobs']} in failed jobs" if pipeline["in_failed_jobs"] else "")
        )
        lines += outcome_lines
    elif not run["dry_run"] and not run["interrupted"] and events["published"]:
        lines.append("pipeline: not waited for (--no-wait); see `fixmem status`")
    for reason, group in report["skipped"].items():
        shown = ", ".join(_short(p) for p in group["paths"][:3])
        more = f" and {group['files'] - 3} more" if group["files"] > 3 else ""
        lines.append(f"skipped {group['files']}: {reason}: {shown}{more}")
    for failure in report["failed"]:
        lines.append(
            f"{failure['status']}: {_short(failure['path'])} ({failure['format'] or 'unknown format'}, "
            f"{failure['turns_read']} turns read): {failure['reason']}"
        )
    if run["interrupted"]:
        lines.append("interrupted: run the same command again to continue where it stopped")
    return "\n".join(lines)


def _short(path: str) -> str:
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path
