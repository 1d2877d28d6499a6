"""``fixmem up``, ``fixmem ingest``, ``fixmem worker``: the long-running pipeline processes.

Settings come from the environment (``FIXMEM_*``); the flags here override them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path

import click

from fixmem import wiring
from fixmem.cli.options import data_dir_option, load_settings, redis_url_option, verbose_option
from fixmem.errors import CliError, ExitCode
from fixmem.runtime import logs
from fixmem.runtime.up import install_stop_signals, run_up
from ingest.consumer import Consumer
from workers.extraction import compiled
from workers.jobs import install
from workers.worker import run_worker, worker_name

log = logging.getLogger("fixmem.cli")


def _exit_with_parent(parent: int | None, stop: threading.Event, *, signal_self: bool) -> None:
    """When ``parent`` dies (its supervisor was killed), stop this process too."""
    if not parent:
        return

    def watch() -> None:
        while not stop.wait(1.0):
            if os.getppid() != parent:
                log.warning("parent %d is gone: stopping", parent)
                stop.set()
                if signal_self:
                    os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@click.command("up")
@click.option(
    "--workers", type=click.IntRange(0, 256), default=None, help="Worker processes (FIXMEM_WORKERS, 2)."
)
@click.option(
    "--demo", is_flag=True, help="Publish demo turns, show their entries and a recall prompt block."
)
@click.option("--exit", "exit_after", is_flag=True, help="Stop after the demo instead of running on.")
@redis_url_option
@data_dir_option
@verbose_option
def up_command(
    *,
    workers: int | None,
    demo: bool,
    exit_after: bool,
    redis_url: str | None,
    data_dir: Path | None,
    verbose: bool,
) -> None:
    """Run the whole pipeline: Redis (embedded unless FIXMEM_REDIS_URL), the consumer and workers."""
    settings = load_settings(redis_url=redis_url, data_dir=data_dir, workers=workers)
    logs.configure("up", verbose=verbose)
    stop = threading.Event()
    install_stop_signals(stop)
    code = run_up(settings, workers=settings.workers, demo=demo, exit_after=exit_after, stop=stop)
    if code != ExitCode.OK:
        raise click.exceptions.Exit(int(code))


@click.command("ingest")
@click.option("--name", default=None, help="Consumer name, stable across restarts (default: the host name).")
@click.option(
    "--burst",
    is_flag=True,
    help="Stop when nothing is left to read; under backpressure, wait for the workers to drain the queue.",
)
@click.option(
    "--max-wait",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="With --burst: give up (exit 75) when a paused queue gets no shorter for this many seconds "
    "(default: FIXMEM_BURST_MAX_WAIT_SECONDS, 60).",
)
@click.option("--max-events", type=click.IntRange(1), default=None, help="Stop after this many entries.")
@click.option("--parent-pid", type=int, default=None, hidden=True)
@redis_url_option
@verbose_option
def ingest_command(
    *,
    name: str | None,
    burst: bool,
    max_wait: float | None,
    max_events: int | None,
    parent_pid: int | None,
    redis_url: str | None,
    verbose: bool,
) -> None:
    """Consume the turn streams: validate, batch into RQ jobs, dead-letter the invalid."""
    settings = load_settings(redis_url=redis_url, burst_max_wait_seconds=max_wait)
    logs.configure("ingest", verbose=verbose)
    client = wiring.redis_client(settings, check_version=True)
    config = wiring.consumer_config(settings, name=name)
    stop = threading.Event()
    install_stop_signals(stop)
    _exit_with_parent(parent_pid, stop, signal_self=False)
    log.info(
        "consumer %s of group %s reading %s",
        config.consumer, config.group, ", ".join(r.stream for r in config.routes),
    )  # fmt: skip
    started = time.monotonic()
    stats = Consumer(client, config).run(burst=burst, max_events=max_events, stop=stop)
    log.info(
        "consumer %s stopped after %.1fs: %d handled, %d jobs, %d dead letters, %d reclaimed",
        config.consumer, time.monotonic() - started,
        stats.handled, stats.jobs, stats.dead_letters, stats.reclaimed,
    )  # fmt: skip
    if stats.stop_reason is not None:
        raise CliError(f"stopped with entries left unread: {stats.stop_reason}", ExitCode.TIMEOUT)


@click.command("worker")
@click.option("--name", default=None, help="Worker name (default: host, pid and a random suffix).")
@click.option("--burst", is_flag=True, help="Stop when the queues are empty.")
@click.option("--max-jobs", type=click.IntRange(1), default=None, help="Stop after this many jobs.")
@click.option("--parent-pid", type=int, default=None, hidden=True)
@redis_url_option
@data_dir_option
@verbose_option
def worker_command(
    *,
    name: str | None,
    burst: bool,
    max_jobs: int | None,
    parent_pid: int | None,
    redis_url: str | None,
    data_dir: Path | None,
    verbose: bool,
) -> None:
    """Run batches from the live queue (first) and the backfill queue; SIGTERM finishes the current job."""
    settings = load_settings(redis_url=redis_url, data_dir=data_dir)
    logs.configure("worker", verbose=verbose)
    client = wiring.redis_client(settings, check_version=True)
    name = name or worker_name()
    install(wiring.worker_context(settings, client, name=name))
    stop = threading.Event()
    _exit_with_parent(parent_pid, stop, signal_self=True)
    options = wiring.worker_options(settings, name=name)
    log.info(
        "worker %s on %s, data in %s, extraction %s",
        name, ", ".join(options.queues), settings.data_dir, "compiled" if compiled() else "pure Python",
    )  # fmt: skip
    level = "INFO" if verbose else "WARNING"
    run_worker(client, options, burst=burst, max_jobs=max_jobs, stop=stop, logging_level=level)
