"""Backfill importers: native agent logs → v1 ``TurnEvent``s. One pure parser module per format.

Each format module has ``parse(data: bytes, *, source, owner, project=None) -> list[TurnEvent]`` (bytes
in, events out, no I/O) and a docstring saying where its fields live and what the format lacks; ``files``
is the thin shell that walks paths, reads bytes, detects the format and never raises for a bad file.

What the events carry, whatever the format:
- one event per user prompt (Claude Code, Aider, Codex, OpenHands event lists) or per run (mini-swe-agent,
  SWE-agent, OpenHands evaluation and resolver output);
- ``tool_events``: the native tool name (``bash``, ``Bash``, ``edit``, ``run``, ``apply_patch`` …), the
  native arguments as ``input`` with a file under ``path`` / ``file_path`` and edits under ``old_str`` /
  ``new_str`` / ``file_text`` (or the harness's own keys), ``output``, ``exit_code`` and ``ok`` only where
  the log states them, ``diff`` where the log has the edit's diff, ``ts`` where the log has a time;
- ``ts``: the last time seen in the turn; turns without a time get ``harness_meta.ts_derived`` and, from
  the parsers, ``UNDATED_EPOCH`` + turn index (their ids are derived with it); ``import_file`` then dates
  them by the file's mtime (the last turn at the mtime, one second apart before it), ids unchanged;
- ``harness_meta``: ``harness``, ``model``, ``session_id``, ``turn``, ``stop_reason``, ``commit`` when known;
  ``cut`` lists strings whose middle was cut to fit the wire limit;
- ``event_id``: ``bf-`` + 32 hex of SHA-256 over (format, the log's session/instance id — empty when it
  has none —, turn index, content hash), never a path: importing the same file again, from any directory
  or under any path argument, yields identical events;
- ``project_key``: ``--project``, else what the log names (repository, instance), else its workspace:
  the checkout's origin remote when this machine has it (``ingest.project_key``), else the workspace as
  the log wrote it; else the log's absolute path.
"""

from __future__ import annotations

from ingest.importers._common import UNDATED_EPOCH, PartialLog, UnreadableLog
from ingest.importers.detect import detect_format
from ingest.importers.files import FORMATS, PARSERS, ImportedFile, import_file, iter_files

__all__ = [
    "FORMATS",
    "PARSERS",
    "UNDATED_EPOCH",
    "ImportedFile",
    "PartialLog",
    "UnreadableLog",
    "detect_format",
    "import_file",
    "iter_files",
]
