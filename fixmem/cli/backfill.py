"""``fixmem backfill PATH...``: replay old agent logs through the pipeline's backfill path, then report.

A thin adapter over ``ingest.backfill``: it builds the ``RunConfig`` from the settings, runs the backfill
(``run``), waits for the pipeline (``follow``), reads what the events became (``workers.backfill_outcomes``)
and prints the report (``report``). Exit codes: 0 done; 65 some files could not be parsed (the rest was
backfilled); 75 the wait ended before the pipeline processed everything, or a job failed; 130 interrupted
(run it again to resume); 69 Redis unreachable.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import click
from rich.console import Console

from fixmem import wiring
from fixmem.cli.options import data_dir_option, load_settings, redis_url_option, require_owner
from fixmem.errors import CliError, ExitCode
from fixmem.settings import Settings
from ingest.backfill.checkpoint import Checkpoint
from ingest.backfill.config import RunConfig, parse_processes
from ingest.backfill.follow import follow_run
from ingest.backfill.plan import parse_since, run_key
from ingest.backfill.progress import ProgressDisplay
from ingest.backfill.records import BackfillError, Drain, absolute_path
from ingest.backfill.report import Verdict, build_report, render, verdict
from ingest.backfill.run import run_backfill, stop_on_signals
from ingest.importers import FORMATS
from workers.backfill_outcomes import PresenceProbe, collect, describe

EXIT_CODES = {
    Verdict.DONE: ExitCode.OK,
    Verdict.PARSE_FAILURES: ExitCode.DATA_ERROR,
    Verdict.UNFINISHED: ExitCode.TIMEOUT,
    Verdict.INTERRUPTED: ExitCode.INTERRUPTED,
}


def run_config(
    settings: Settings,
    *,
    owner: str,
    format: str = "auto",
    project: str | None = None,
    since: float | None = None,
) -> RunConfig:
    """One backfill's options: the stream, group, queue and limits come from ``settings``."""
    return RunConfig(
        owner=owner,
        stream=settings.backfill_stream,
        group=settings.group,
        queue=settings.backfill_queue,
        rate=settings.backfill_rate,
        max_backlog=settings.backfill_max_backlog,
        max_queued_jobs=settings.backfill_max_queued_jobs,
        parse_processes=parse_processes(settings.backfill_parse_processes),
        format=format,
        project=project,
        since=since,
    )


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
        backfill_parse_processes=jobs, owner=owner,
    )  # fmt: skip
    owner = require_owner(settings)
    try:
        since_ts = None if since is None else parse_since(since, now=time.time())
    except BackfillError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from exc
    config = run_config(settings, owner=owner, format=format_, project=project, since=since_ts)
    absolute = [absolute_path(p) for p in paths]
    key = run_key(absolute, format=format_, owner=owner, project=project, since=since)
    if settings.backfill_nice and not dry_run:
        os.nice(settings.backfill_nice)  # behind live traffic on a shared host too (parsing is the CPU)
    client = None if dry_run else wiring.redis_client(settings)
    store = None if dry_run else wiring.make_store(settings, None)  # reads only: no lock
    probe = PresenceProbe(store) if store is not None else None
    stop = threading.Event()
    drain: Drain | None = None
    started = time.monotonic()
    with stop_on_signals(stop), ProgressDisplay(Console(stderr=True)) as display:
        try:
            result = run_backfill(
                client, list(paths), config,
                run_key=key, restart=restart, listener=display, stop=stop, before_publish=probe,
            )  # fmt: skip
        except BackfillError as exc:
            raise CliError(str(exc), ExitCode.USAGE) from exc
        publish_seconds = time.monotonic() - started
        if client is not None and wait:
            drain = follow_run(
                client, result, config, timeout=settings.backfill_wait_seconds,
                announce=display.console.print, listener=display, stop=stop,
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
        result, drain, outcomes=outcomes.to_json() if outcomes is not None else None,
        run={
            "key": key, "paths": absolute, "owner": owner, "format": format_, "project": project,
            "since": since, "dry_run": dry_run, "stream": None if dry_run else settings.backfill_stream,
            "interrupted": interrupted, "publish_seconds": round(publish_seconds, 3),
            "seconds": round(time.monotonic() - started, 3),
        },
    )  # fmt: skip
    click.echo(json.dumps(report, indent=2) if as_json else render(report, outcome_lines=describe(report)))
    code = EXIT_CODES[verdict(report)]
    if code is not ExitCode.OK:
        raise click.exceptions.Exit(int(code))
