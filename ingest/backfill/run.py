"""Running a backfill: walk, import, publish to the backfill stream with a checkpoint.

``run_backfill`` walks the paths, plans each file (``parse_pool``: import with ``ingest.importers``, then
``plan``) and publishes its events (``publisher``, with the ``checkpoint``) to the backfill stream, which
the consumer reads only after the live stream and whose jobs workers take only when the live queue is
empty. ``follow`` then tracks the run's stream ids through the pipeline.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

import redis

from ingest.backfill.checkpoint import Checkpoint
from ingest.backfill.config import RunConfig
from ingest.backfill.parse_pool import planned
from ingest.backfill.publisher import Listener, Publisher, Silent
from ingest.backfill.records import BackfillError, FileRecord, RunResult, Sent, absolute_path
from ingest.importers import FORMATS, iter_files

__all__ = ["RunResult", "run_backfill", "stop_on_signals", "walk"]


def walk(paths: Sequence[Path]) -> list[Path]:
    """Every file under ``paths`` once (the first path argument that reaches a file names it).

    Raises BackfillError naming a path that does not exist (before anything is read).
    """
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise BackfillError(f"no such file or directory: {', '.join(missing)}")
    seen: set[str] = set()
    found = []
    for root in paths:
        for path in iter_files([root]):
            absolute = absolute_path(path)
            if absolute not in seen:
                seen.add(absolute)
                found.append(path)
    return found


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return 0, 0  # the import reports why it cannot be read
    return st.st_size, st.st_mtime_ns


def run_backfill(
    client: redis.Redis | None,
    paths: Sequence[Path],
    config: RunConfig,
    *,
    run_key: str | None = None,
    restart: bool = False,
    listener: Listener | None = None,
    stop: threading.Event | None = None,
    before_publish: Callable[[Sequence[Sent]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RunResult:
    """Import every file under ``paths`` and publish its events (``client`` None: a dry run, nothing sent).

    ``run_key`` names the checkpoint (None: none is kept); ``restart`` discards it first.
    ``before_publish`` sees each file's events (identities, no stream ids yet) before they are sent.
    ``stop`` ends the run after the events being published (``RunResult.interrupted``). Records carry
    absolute paths. Raises BackfillError for an unknown format or a missing path, redis errors when Redis
    fails (the checkpoint keeps what was published).
    """
    if config.format != "auto" and config.format not in FORMATS:
        raise BackfillError(f"unknown format {config.format!r}: expected auto or one of {', '.join(FORMATS)}")
    listener = listener or Silent()
    stop = stop or threading.Event()
    started = clock()
    files = [(path, *_stat(path)) for path in walk(paths)]
    listener.started(len(files), sum(size for _, size, _ in files))
    publisher = None
    done: dict[str, FileRecord] = {}
    if client is not None:
        checkpoint = Checkpoint(client, run_key or "unnamed")
        if run_key is None or restart:
            checkpoint.clear()
        else:
            done = checkpoint.load()
        publisher = Publisher(client, config, checkpoint, listener=listener, stop=stop, clock=clock)
    result = RunResult()

    def finish(records: Sequence[FileRecord]) -> None:
        for record in records:
            result.records.append(record)
            listener.file_done(record)

    with contextlib.closing(planned(files, done, config)) as plans:
        for position, plan in enumerate(plans, start=1):
            if plan.record.resumed:
                finish([plan.record])
            else:
                result.bytes_read += plan.read_bytes
                if plan.record.sent and before_publish is not None:
                    before_publish(plan.record.sent)
                if publisher is None:  # a dry run: the events that would be published count as such
                    finish([plan.record])
                    listener.published(len(plan.record.sent))
                else:
                    finish(publisher.add(*plan[:2]))
            if stop.is_set() and position < len(files):  # files remain: this run stops short
                result.interrupted = True
                break
    if publisher is not None:
        finish(publisher.flush()[1])
    result.records.sort(key=lambda r: r.path)
    result.seconds = clock() - started
    return result


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (the run ends after the events being published); handlers restored.

    Off the main thread (where handlers cannot be set) it does nothing.
    """
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
