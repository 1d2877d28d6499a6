"""``fixmem backfill PATH...``: replay old agent logs through the pipeline's backfill path, then report.

Walk and import (``ingest.importers``), publish to the backfill stream within the rate and backlog limits
with a checkpoint (``ingest.backfill_run``), wait for the workers to process the events, and report: per
format files and turns, entries by outcome, skipped files and events with reasons, files that could not be
parsed. Exit codes: 0 done; 65 some files could not be parsed (the rest was backfilled); 75 the wait ended
before the pipeline processed everything, or a job failed; 130 interrupted (run it again to resume);
69 Redis unreachable.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from fixmem import wiring
from fixmem.backfill_outcomes import Outcomes, PresenceProbe, collect
from fixmem.errors import CliError, ExitCode
from fixmem.options import data_dir_option, load_settings, redis_url_option
from ingest.backfill import BackfillError, FileRecord, parse_since, run_key, summarize
from ingest.backfill_follow import Drain, consumers_reading, follow
from ingest.backfill_run import Checkpoint, RunConfig, RunResult, run_backfill
from ingest.importers import FORMATS


class ProgressDisplay:
    """A rich progress bar on stderr: bytes of files done (the ETA), files, events/s; then the pipeline."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=console,
            disable=not console.is_terminal,
            transient=False,
        )
        self.files = self.done = self.events = 0
        self.started_at = time.monotonic()
        self.task: TaskID | None = None
        self.pipeline: TaskID | None = None

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def started(self, files: int, total_bytes: int) -> None:
        self.files = files
        self.started_at = time.monotonic()
        self.task = self.progress.add_task("backfill", total=max(1, total_bytes), detail="", note="")
        self._refresh()

    def file_done(self, record: FileRecord) -> None:
        self.done += 1
        if self.task is not None:
            self.progress.advance(self.task, record.size)
        self._refresh()

    def published(self, events: int) -> None:
        self.events += events
        self._refresh()

    def waiting(self, message: str | None) -> None:
        if self.task is not None:
            self.progress.update(self.task, note=message or "")

    def following(self, drain: Drain) -> None:
        if self.pipeline is None:
            self.pipeline = self.progress.add_task("pipeline", total=max(1, drain.total), detail="", note="")
        self.progress.update(
            self.pipeline,
            completed=drain.processed,
            detail=f"{drain.processed}/{drain.total} events processed",
            note=f"{len(drain.failed)} in failed jobs" if drain.failed else "",
        )

    def _refresh(self) -> None:
        if self.task is None:
            return
        rate = self.events / max(1e-6, time.monotonic() - self.started_at)
        self.progress.update(
            self.task, detail=f"{self.done}/{self.files} files · {self.events} events · {rate:.0f} ev/s"
        )


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (the run ends after the events being published); handlers restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


@click.command("backfill")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format", "format_", type=click.Choice(["auto", *FORMATS]), default="auto", show_default=True,
    help="Format of every file; auto detects each file's from its content.",
)  # fmt: skip
@click.option("--owner", default=None, help="Whose memory the turns join (default: your login name).")
@click.option("--project", default=None, help="Project key of every turn (default: from each log).")
@click.option(
    "--since", default=None, help="Only turns at or after DATE: 2025-01-31, 2025-01-31T12:00Z, 30d."
)
@click.option(
    "--rate", type=click.FloatRange(min=0), default=None,
    help="At most N events/s (FIXMEM_BACKFILL_RATE, 500; 0: no limit).",
)  # fmt: skip
@click.option(
    "--jobs", type=click.IntRange(min=0, max=64), default=None,
    help="Processes parsing files (FIXMEM_BACKFILL_PARSE_PROCESSES; 0: one per CPU, at most 4).",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Parse and report; publish nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--wait/--no-wait", default=True, help="Wait for the entries before reporting (default).")
@click.option(
    "--timeout", type=click.FloatRange(min=0), default=None,
    help="Seconds to wait for the entries (FIXMEM_BACKFILL_WAIT_SECONDS, 600).",
)  # fmt: skip
@click.option("--restart", is_flag=True, help="Ignore what an interrupted run of this backfill published.")
@redis_url_option
@data_dir_option
def backfill_command(
    *,
    paths: tuple[Path, ...],
    format_: str,
    owner: str | None,
    project: str | None,
    since: str | None,
    rate: float | None,
    jobs: int | None,
    dry_run: bool,
    as_json: bool,
    wait: bool,
    timeout: float | None,
    restart: bool,
    redis_url: str | None,
    data_dir: Path | None,
) -> None:
    """Replay agent logs (files or directories, walked) into the fix memory, behind live traffic.

    Resumable: after an interruption, the same command continues where it stopped. Re-running a finished
    backfill adds nothing new (each turn has a deterministic id).
    """
    settings = load_settings(
        redis_url=redis_url, data_dir=data_dir, backfill_rate=rate, backfill_wait_seconds=timeout,
        backfill_parse_processes=jobs,
    )  # fmt: skip
    owner = owner or _login()
    try:
        since_ts = None if since is None else parse_since(since, now=time.time())
    except BackfillError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from exc
    config = RunConfig(
        owner,
        stream=settings.backfill_stream,
        group=settings.group,
        format=format_,
        project=project,
        since=since_ts,
        rate=settings.backfill_rate,
        queue=settings.backfill_queue,
        max_backlog=settings.backfill_max_backlog,
        max_queued_jobs=settings.backfill_max_queued_jobs,
        parse_processes=parse_processes(settings.backfill_parse_processes),
    )
    absolute = [Path(os.path.abspath(p)).as_posix() for p in paths]
    key = run_key(absolute, format=format_, owner=owner, project=project, since=since)
    if settings.backfill_nice and not dry_run:
        os.nice(settings.backfill_nice)  # behind live traffic on a shared host too (parsing is the CPU)
    client = None if dry_run else wiring.redis_client(settings)
    store = None if dry_run else wiring.make_store(settings, None)  # reads only: no lock
    probe = PresenceProbe(store) if store is not None else None
    stop = threading.Event()
    drain: Drain | None = None
    started = time.monotonic()
    with _stop_on_signals(stop), ProgressDisplay(Console(stderr=True)) as display:
        try:
            result = run_backfill(
                client, list(paths), config,
                run_key=key, restart=restart, listener=display, stop=stop, before_publish=probe,
            )  # fmt: skip
        except BackfillError as exc:
            raise CliError(str(exc), ExitCode.USAGE) from exc
        publish_seconds = time.monotonic() - started
        if client is not None and wait and result.sent and not result.interrupted:
            if not consumers_reading(client, settings.backfill_stream, settings.group):
                display.console.print(
                    f"no consumer reads {settings.backfill_stream} yet (is `fixmem up` running?): "
                    f"waiting up to {settings.backfill_wait_seconds:g}s for the pipeline"
                )
            drain = follow(
                client, [s.stream_id for s in result.sent],
                stream=settings.backfill_stream, group=settings.group, queue=settings.backfill_queue,
                timeout=settings.backfill_wait_seconds, listener=display, stop=stop,
            )  # fmt: skip
    outcomes = None
    if drain is not None and store is not None and client is not None and store.root.is_dir():
        outcomes = collect(
            store, client, result.records, drain,
            dead_stream=settings.dead_stream, config=config,
            present=probe.present if probe else (), enabled=settings.fix_memory_enabled,
        )  # fmt: skip
    interrupted = result.interrupted or stop.is_set()
    if client is not None and not interrupted and (drain is None or drain.settled):
        Checkpoint(client, key).clear()
    report = build_report(
        result, drain, outcomes,
        run={
            "key": key, "paths": absolute, "owner": owner, "format": format_, "project": project,
            "since": since, "dry_run": dry_run, "stream": None if dry_run else settings.backfill_stream,
            "interrupted": interrupted, "publish_seconds": round(publish_seconds, 3),
            "seconds": round(time.monotonic() - started, 3),
        },
    )  # fmt: skip
    click.echo(json.dumps(report, indent=2) if as_json else render(report))
    code = exit_code(report)
    if code is not ExitCode.OK:
        raise click.exceptions.Exit(int(code))


def parse_processes(setting: int) -> int:
    """Processes that parse files: the setting, or (0) one per CPU this process may use, at most 4."""
    if setting:
        return setting
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (some containers)
        raise CliError("cannot tell who you are: pass --owner", ExitCode.USAGE) from None


def build_report(
    result: RunResult, drain: Drain | None, outcomes: Outcomes | None, *, run: dict[str, Any]
) -> dict[str, Any]:
    """The final report as a JSON value (files side, throughput, and the pipeline side when waited)."""
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
            **(outcomes.to_json() if outcomes is not None else {}),
        }
    return report


def exit_code(report: dict[str, Any]) -> ExitCode:
    """The named exit code of a report (see the module docstring)."""
    pipeline = report["pipeline"]
    if report["run"]["interrupted"]:
        return ExitCode.INTERRUPTED
    if pipeline is not None and (not pipeline["settled"] or pipeline["in_failed_jobs"]):
        return ExitCode.TIMEOUT
    if report["failed"]:
        return ExitCode.DATA_ERROR
    return ExitCode.OK


def render(report: dict[str, Any]) -> str:
    """The report as text for a terminal."""
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
        + (f", {events['held_back']['before --since']} before --since" if run["since"] else "")
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
        if "entries" not in pipeline:
            lines.append("entries: no fix logs under FIXMEM_DATA_DIR here (the workers write elsewhere?)")
        else:
            by_outcome = ", ".join(f"{k} {v}" for k, v in pipeline["entries"].items()) or "none"
            lines.append(
                f"entries: {by_outcome} ({pipeline['new_entries']} new, "
                f"{pipeline['already_in_log']} already in the log)"
            )
            if pipeline["no_entry"]:
                lines.append("no entry: " + ", ".join(f"{k} {v}" for k, v in pipeline["no_entry"].items()))
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
