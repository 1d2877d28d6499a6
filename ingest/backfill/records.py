"""A backfill's values: what became of each walked file (``FileRecord``, also its checkpoint entry), what a
run did (``RunResult``) and where its events are in the pipeline (``Drain``, read by ``follow``).

Every walked file ends as exactly one ``FileRecord``: ``imported`` (all its turns read), ``partial`` (some
turns read, some of the file could not be parsed), ``failed`` (nothing could be read from a log, or the
file could not be read at all) or ``skipped`` (not an agent log, a subagent log imported with its parent,
a log with no turns, or last modified before ``--since``). A bad file costs that file, never the run.
A resumed run trusts a record only while the file's size and modification time are unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

import orjson

from ingest.errors import IngestError

__all__ = ["BackfillError", "Drain", "FileRecord", "FileStatus", "RunResult", "Sent", "absolute_path"]


class BackfillError(IngestError):
    """Raised when a backfill cannot start: a bad ``--since``, an unknown format, no such path."""


class FileStatus(StrEnum):
    """What became of one walked file."""

    IMPORTED = "imported"
    PARTIAL = "partial"
    FAILED = "failed"
    SKIPPED = "skipped"


class Sent(NamedTuple):
    """One event a backfill published: where it sits in the stream and whose entry it becomes."""

    stream_id: str
    owner: str
    project_key: str
    event_id: str


@dataclass(frozen=True)
class FileRecord:
    """What one file contributed to a backfill; also its checkpoint entry. ``turns`` = events read."""

    path: str
    size: int
    mtime_ns: int
    status: FileStatus
    format: str | None = None
    reason: str = ""
    turns: int = 0
    held_back: int = 0  # turns older than --since
    sent: tuple[Sent, ...] = ()
    resumed: bool = False  # published by an earlier, interrupted run of the same backfill

    def matches(self, size: int, mtime_ns: int) -> bool:
        """True while the file is the one this record describes (same size and modification time)."""
        return self.size == size and self.mtime_ns == mtime_ns

    def to_json(self) -> bytes:
        """The checkpoint value (``resumed`` is not stored: it describes the reading run)."""
        return orjson.dumps(
            {
                "size": self.size,
                "mtime_ns": self.mtime_ns,
                "status": self.status.value,
                "format": self.format,
                "reason": self.reason,
                "turns": self.turns,
                "held_back": self.held_back,
                "sent": [list(s) for s in self.sent],
            }
        )

    @classmethod
    def from_json(cls, path: str, raw: bytes | str) -> FileRecord | None:
        """The record stored for ``path``, marked ``resumed``; None when the value is not one of ours."""
        try:
            value = orjson.loads(raw)
            return cls(
                path=path,
                size=int(value["size"]),
                mtime_ns=int(value["mtime_ns"]),
                status=FileStatus(value["status"]),
                format=value["format"],
                reason=str(value["reason"]),
                turns=int(value["turns"]),
                held_back=int(value["held_back"]),
                sent=tuple(Sent(*map(str, s)) for s in value["sent"]),
                resumed=True,
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


def absolute_path(path: Path | str) -> str:
    """The absolute path in POSIX form, symlinks not resolved (a record's path, the checkpoint's field)."""
    return Path(os.path.abspath(path)).as_posix()


@dataclass
class RunResult:
    """What ``run_backfill`` did: a record per walked file, in walk order."""

    records: list[FileRecord] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0
    bytes_read: int = 0  # bytes of the files this run read (resumed and unread-skipped files excluded)

    @property
    def sent(self) -> list[Sent]:
        """Every event of this backfill in the stream (including those of resumed files)."""
        return [s for r in self.records for s in r.sent]


@dataclass(frozen=True)
class Drain:
    """Where a backfill's events are in the pipeline: the stream ids not processed yet, by stage."""

    total: int
    unread: frozenset[str] = frozenset()  # not yet read by the consumer
    pending: frozenset[str] = frozenset()  # read, not yet handed to a job
    queued: frozenset[str] = frozenset()  # in a batch waiting for a worker, running, or waiting to retry
    failed: frozenset[str] = frozenset()  # in a batch whose job is in RQ's failed registry

    @property
    def processed(self) -> int:
        """Events the workers are done with (an entry, a skip, a duplicate or a dead letter)."""
        return self.total - len(self.unread) - len(self.pending) - len(self.queued) - len(self.failed)

    @property
    def settled(self) -> bool:
        """Nothing of the backfill is still on its way (failed batches stay failed until retried)."""
        return not (self.unread or self.pending or self.queued)

    @property
    def unfinished(self) -> frozenset[str]:
        """Every id not processed: on its way or failed."""
        return self.unread | self.pending | self.queued | self.failed
