"""Which agent-log format a file is, judged from its first bytes (the name only breaks ties).

Pure. JSON documents and JSON lines are told apart by the keys of their first record; markdown by
Aider's ``####`` request lines. Returns None for anything unrecognized (binary, empty, other JSON).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

_CODEX_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
_CLAUDE_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"}
)
_AIDER_REQUEST = re.compile(rb"^#### ", re.MULTILINE)
_AIDER_MARKS = re.compile(rb"^(?:# aider chat started at |> |<{7} (?:SEARCH|ORIGINAL))", re.MULTILINE)
_SWE_AGENT = re.compile(rb'"trajectory"\s*:\s*\[')
_MINI = re.compile(rb'"trajectory_format"\s*:\s*"mini-swe-agent|"mini_version"\s*:')
_MESSAGES = re.compile(rb'"messages"\s*:\s*\[')
_OH_EVENT = re.compile(rb'"source"\s*:\s*"(?:agent|user|environment)"')


def detect_format(path: Path, head: bytes) -> str | None:
    """The format name of a file whose first bytes are ``head`` (ideally the whole file), or None."""
    if not head.strip() or b"\x00" in head[:4096]:
        return None
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if body[:1] in {b"{", b"["}:
        return _json_format(path, body)
    if _AIDER_REQUEST.search(head) and (
        _AIDER_MARKS.search(head) or path.name.endswith(".aider.chat.history.md")
    ):
        return "aider"
    return None


def _json_format(path: Path, body: bytes) -> str | None:
    first_line = body.split(b"\n", 1)[0]
    record = _try_json(first_line)
    if record is None and b"\n" not in body.rstrip():
        record = _try_json(body)
    if isinstance(record, dict):
        by_record = _record_format(record)
        if by_record is not None:
            return by_record
    if body.startswith(b"["):
        return "openhands" if _OH_EVENT.search(body[:65536]) else None
    if _MINI.search(body) or (path.name.endswith(".traj.json") and _MESSAGES.search(body)):
        return "mini-swe-agent"
    if _SWE_AGENT.search(body[:4096]):
        return "swe-agent"
    return None


def _try_json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _record_format(record: dict[str, Any]) -> str | None:
    """The format whose records look like this one (the first line of a JSONL file, or a whole document)."""
    kind = record.get("type") if isinstance(record.get("type"), str) else None
    info = record.get("info")
    if record.get("v") == 1 and "owner" in record and "project_key" in record:
        return "events"
    if kind in _CODEX_TYPES and isinstance(record.get("payload"), dict):
        return "codex"
    if "instructions" in record and "id" in record and "timestamp" in record:
        return "codex"  # the first line of an older rollout
    if kind in _CLAUDE_TYPES and any(k in record for k in ("sessionId", "uuid", "leafUuid", "messageId")):
        return "claude-code"
    if isinstance(record.get("history"), list) and any(
        k in record for k in ("instance_id", "instruction", "issue")
    ):
        return "openhands"
    if str(record.get("trajectory_format", "")).startswith("mini-swe-agent"):
        return "mini-swe-agent"
    if isinstance(record.get("messages"), list) and isinstance(info, dict):
        return "mini-swe-agent"
    if isinstance(record.get("trajectory"), list):
        return "swe-agent"
    return None
