"""Backfill planning, pure: what each log file contributes and what to hold back.

Rules this file obeys (values in, values out; no Redis, no files, no clock — ``now`` is passed in):

- ``plan_file`` turns one imported file into its ``FileRecord`` (``ingest.backfill.records``) and the
  events to publish.
- ``--since`` holds back turns older than the cutoff; a turn without a real time (``ts_derived``) is judged
  by its file's modification time, the best bound the log gives.
- ``run_key`` is a backfill's identity: the same paths and options resume the same checkpoint.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from ingest.backfill.records import BackfillError, FileRecord, FileStatus
from ingest.importers import ImportedFile
from ingest.importers.files import EMPTY_FILE, NOT_REGULAR
from ingest.schema import TurnEvent

__all__ = ["BEFORE_SINCE", "is_recent", "parse_since", "plan_file", "run_key", "skipped_unread"]

BEFORE_SINCE = "before --since"  # the reason a turn is held back
MODIFIED_BEFORE_SINCE = "last modified before --since"
NO_TURNS = "agent log with no turns"
NOT_A_LOG = "not an agent log (no known format)"
EMPTY = "empty file"
SPECIAL = "not a regular file (FIFO, socket, device)"


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
