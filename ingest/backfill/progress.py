"""A backfill's progress on a terminal (rich, on stderr): bytes of files done (the ETA), files, events/s;
then the pipeline. It is the ``Listener`` that ``run_backfill`` and ``follow`` tell what they do."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from ingest.backfill.records import Drain, FileRecord

__all__ = ["ProgressDisplay"]


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
