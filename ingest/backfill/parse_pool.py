"""Planning files for a backfill, in walk order: in this process, or by a pool of parse processes.

Importing is the CPU cost of a backfill. ``planned`` hands the publisher each file's plan in walk order;
with ``config.parse_processes`` > 1 and enough bytes to read, spawned processes (lower CPU priority,
Ctrl-C left to the parent, gone with it) import at most ``LOOKAHEAD`` files each ahead of the publisher.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

from ingest.backfill.config import RunConfig
from ingest.backfill.plan import MODIFIED_BEFORE_SINCE, plan_file, skipped_unread
from ingest.backfill.records import FileRecord, Sent, absolute_path
from ingest.importers import import_file

__all__ = ["LOOKAHEAD", "Planned", "plan_path", "planned"]

LOOKAHEAD = 8  # files per parse process planned ahead of publishing (bounds memory under a slow pipeline)


class Planned(NamedTuple):
    """One file, ready to publish: its record (``sent`` without stream ids yet) and its events' wire bytes."""

    record: FileRecord
    wires: list[bytes]
    read_bytes: int = 0  # what was read to plan it (0: resumed, or skipped unread)


def plan_path(path: Path, size: int, mtime_ns: int, config: RunConfig) -> Planned:
    """Import and plan one file (in a parse process, or here): pure but for reading the file."""
    absolute = absolute_path(path)
    if config.since is not None and mtime_ns and mtime_ns / 1e9 < config.since:
        return Planned(skipped_unread(absolute, size, mtime_ns, MODIFIED_BEFORE_SINCE), [])
    imported = import_file(path, format=config.format, owner=config.owner, project=config.project)
    record, events = plan_file(imported, path=absolute, size=size, mtime_ns=mtime_ns, since=config.since)
    sent = tuple(Sent("", e.owner, e.project_key, e.event_id) for e in events)
    return Planned(dataclasses.replace(record, sent=sent), [e.to_wire() for e in events], size)


def _parse_process(nice: int, parent: int) -> None:
    """Parse processes leave Ctrl-C to the parent (which stops after the file being published), yield the
    CPU to live work by ``nice``, and exit when the parent is gone (SIGKILL leaves them no other word)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        os.nice(nice)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def planned(
    files: Sequence[tuple[Path, int, int]], done: dict[str, FileRecord], config: RunConfig
) -> Generator[Planned, None, None]:
    """Each file's plan, in walk order: resumed from ``done``, or imported — by ``config.parse_processes``
    processes when more than one, at most ``LOOKAHEAD`` files per process ahead of the publisher."""
    pool = None
    to_read = sum(size for path, size, mtime_ns in files if not _resumable(done, path, size, mtime_ns))
    if config.parse_processes > 1 and len(files) > 1 and to_read >= config.pool_min_bytes:
        pool = ProcessPoolExecutor(
            config.parse_processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_parse_process,
            initargs=(config.parse_nice, os.getpid()),
        )
    window: deque[Future[Planned] | Planned] = deque()
    finished = False
    try:
        for path, size, mtime_ns in files:
            prior = _resumable(done, path, size, mtime_ns)
            if prior is not None:
                window.append(Planned(prior, []))
            elif pool is None:
                window.append(plan_path(path, size, mtime_ns, config))
            else:
                window.append(pool.submit(plan_path, path, size, mtime_ns, config))
            while len(window) > (LOOKAHEAD * config.parse_processes if pool else 0):
                head = window.popleft()
                yield head.result() if isinstance(head, Future) else head
        for head in window:
            yield head.result() if isinstance(head, Future) else head
        finished = True
    finally:
        if pool is not None:  # stopped early: do not wait for parses nobody will publish
            pool.shutdown(wait=finished, cancel_futures=True)


def _resumable(done: dict[str, FileRecord], path: Path, size: int, mtime_ns: int) -> FileRecord | None:
    """The checkpoint's record of ``path`` if the file is unchanged since."""
    prior = done.get(absolute_path(path))
    return prior if prior is not None and prior.matches(size, mtime_ns) else None
