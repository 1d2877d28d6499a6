"""Backfill planning, pure: what each log file contributes, what to hold back, how fast to send, what to say.

Rules this file obeys (values in, values out; no Redis, no files, no clock — ``now`` is passed in):

- Every walked file ends as exactly one ``FileRecord``: ``imported`` (all its turns read), ``partial`` (some
  turns read, some of the file could not be parsed), ``failed`` (nothing could be read from a log, or the
  file could not be read at all) or ``skipped`` (not an agent log, a subagent log imported with its parent,
  a log with no turns, or last modified before ``--since``). A bad file costs that file, never the run.
- ``--since`` holds back turns older than the cutoff; a turn without a real time (``ts_derived``) is judged
  by its file's modification time, the best bound the log gives.
- The rate limit is a token bucket over events; the caller sleeps for what ``TokenBucket.take`` returns.
- A ``FileRecord`` is also the checkpoint entry of its file (``to_json``/``from_json``): a resumed run
  trusts a record only while the file's size and modification time are unchanged.

The I/O around this (checkpoint hash, publishing, backlog, waiting for the pipeline) is in
``ingest.backfill_run``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple

import orjson

from ingest.errors import IngestError
from ingest.importers import ImportedFile
from ingest.importers.files import EMPTY_FILE, NOT_REGULAR
from ingest.schema import TurnEvent

__all__ = [
    "BEFORE_SINCE",
    "BackfillError",
    "FileRecord",
    "FileStatus",
    "Sent",
    "TokenBucket",
    "parse_since",
    "plan_file",
    "run_key",
    "skipped_unread",
    "summarize",
]

BEFORE_SINCE = "before --since"  # the reason a turn is held back
MODIFIED_BEFORE_SINCE = "last modified before --since"
NO_TURNS = "agent log with no turns"
NOT_A_LOG = "not an agent log (no known format)"
EMPTY = "empty file"
SPECIAL = "not a regular file (FIFO, socket, device)"


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


# -- options -----------------------------------------------------------------------------------------------

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, *, now: float) -> float:
    """``--since`` in unix seconds: an ISO date or time (naive = UTC), or an age (``90m``, ``12h``, ``30d``).

    Raises BackfillError naming the accepted forms.
    """
    relative = _RELATIVE.match(text)
    if relative:
        return now - float(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BackfillError(
            f"--since {text!r}: expected a date (2025-01-31), a time (2025-01-31T12:00:00Z) "
            "or an age (90m, 12h, 30d, 2w)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def run_key(paths: Sequence[str], *, format: str, owner: str, project: str | None, since: str | None) -> str:
    """The identity of a backfill: the same absolute paths and options resume the same checkpoint."""
    material = orjson.dumps(
        {"paths": sorted(paths), "format": format, "owner": owner, "project": project, "since": since},
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(material).hexdigest()[:24]


# -- one file ----------------------------------------------------------------------------------------------


def skipped_unread(path: str, size: int, mtime_ns: int, reason: str) -> FileRecord:
    """The record of a file skipped without reading it (e.g. last modified before ``--since``)."""
    return FileRecord(path, size, mtime_ns, FileStatus.SKIPPED, reason=reason)


def is_recent(event: TurnEvent, *, since: float | None, mtime: float) -> bool:
    """Whether a turn is at or after ``since``; a turn without a real time is judged by ``mtime``."""
    if since is None:
        return True
    derived = bool((event.harness_meta.model_extra or {}).get("ts_derived"))
    return (mtime if derived else event.ts) >= since


def plan_file(
    imported: ImportedFile, *, path: str, size: int, mtime_ns: int, since: float | None
) -> tuple[FileRecord, list[TurnEvent]]:
    """The record of one imported file and the events to publish (in log order)."""
    base = FileRecord(path, size, mtime_ns, FileStatus.IMPORTED, format=imported.format)
    if not imported.is_log:
        error = imported.error or ""
        reason = EMPTY if error == EMPTY_FILE else SPECIAL if error.startswith(NOT_REGULAR) else NOT_A_LOG
        return _replace(base, status=FileStatus.SKIPPED, reason=reason), []
    keep = [e for e in imported.events if is_recent(e, since=since, mtime=mtime_ns / 1e9)]
    held_back = len(imported.events) - len(keep)
    turns = len(imported.events)
    if imported.error is not None:
        status = FileStatus.PARTIAL if imported.events else FileStatus.FAILED
        record = _replace(base, status=status, reason=imported.error, turns=turns, held_back=held_back)
        return record, keep
    if not imported.events:
        reason = "; ".join(imported.notes) or NO_TURNS
        return _replace(base, status=FileStatus.SKIPPED, reason=reason), []
    return _replace(base, turns=turns, held_back=held_back), keep


def _replace(record: FileRecord, **changes: Any) -> FileRecord:
    values = {f: getattr(record, f) for f in record.__dataclass_fields__}
    values.update(changes)
    return FileRecord(**values)


# -- rate ----------------------------------------------------------------------------------------------------


@dataclass
class TokenBucket:
    """Rate limit over events: ``rate`` per second on average, bursts up to ``burst``; rate 0 = no limit.

    ``take(n, now)`` spends ``n`` tokens and returns how long (seconds) the caller must wait before sending;
    a take larger than the bucket is allowed and paid for by waiting longer (the debt carries over).
    """

    rate: float
    burst: float = 0.0
    tokens: float = field(default=math.nan)
    last: float | None = None

    def __post_init__(self) -> None:
        if self.rate < 0 or not math.isfinite(self.rate):
            raise BackfillError(f"--rate {self.rate}: expected events per second >= 0 (0: no limit)")
        self.burst = self.burst or max(1.0, self.rate)
        if math.isnan(self.tokens):
            self.tokens = self.burst

    def take(self, n: int, now: float) -> float:
        """Spend ``n`` tokens at time ``now``; returns the wait in seconds (0 when within the rate)."""
        if self.rate == 0:
            return 0.0
        if self.last is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= n
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


# -- the report ----------------------------------------------------------------------------------------------


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
