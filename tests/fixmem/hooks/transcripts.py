"""Claude Code transcripts and hook payloads in the documented shapes, for the hook tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Transcript:
    """A session's ``<session>.jsonl`` as Claude Code writes it: one record a line, chained by uuid."""

    def __init__(self, path: Path, session_id: str, cwd: str) -> None:
        self.path, self.session_id, self.cwd = path, session_id, cwd
        self.records: list[dict[str, Any]] = []
        self._tool = 0

    def _add(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        n = len(self.records)
        self.records.append(
            {
                "parentUuid": self.records[-1]["uuid"] if self.records else None,
                "isSidechain": False,
                "userType": "external",
                "cwd": self.cwd,
                "sessionId": self.session_id,
                "version": "2.0.14",
                "type": kind,
                "message": message,
                "uuid": f"00000000-0000-4000-8000-{n:012d}",
                "timestamp": f"2026-11-02T10:{n // 60:02d}:{n % 60:02d}.000Z",
                **extra,
            }
        )

    def prompt(self, text: str) -> Transcript:
        self._add("user", {"role": "user", "content": text})
        return self

    def tool(self, name: str, tool_input: dict[str, Any], output: str, *, error: bool = False) -> Transcript:
        tool_id = f"toolu_{self.session_id[:8]}{self._tool + 1:04d}"
        self._assistant({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}, "tool_use")
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": error}
        self._add("user", {"role": "user", "content": [result]})
        return self

    def reply(self, text: str) -> Transcript:
        self._assistant({"type": "text", "text": text}, "end_turn")
        return self

    def _assistant(self, block: dict[str, Any], stop_reason: str) -> None:
        self._tool += 1
        message = {
            "id": f"msg_{self.session_id[:8]}{self._tool:04d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [block],
            "stop_reason": stop_reason,
        }
        self._add("assistant", message)

    def write(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        return self.path


def hook_payload(event: str, transcript: Transcript, **fields: Any) -> dict[str, Any]:
    """A hook's stdin: the common fields of the reference plus the event's own."""
    return {
        "session_id": transcript.session_id,
        "transcript_path": str(transcript.path),
        "cwd": transcript.cwd,
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
