"""Codex CLI rollout JSONL (``~/.codex/sessions/…/rollout-*.jsonl``) → one turn event per user prompt.

Records are ``{timestamp, type: session_meta|turn_context|response_item|event_msg, payload}`` (older
rollouts: a first ``{id, timestamp, instructions, git}`` line, then bare response items). An
``event_msg`` ``user_message`` opens a turn (files without one: a ``response_item`` user message that is not
injected context such as ``<environment_context>`` or ``AGENTS.md``). Tool calls are ``function_call``
``{name, arguments (a JSON string), call_id}`` (tool = ``name``: ``shell``, ``exec_command``,
``apply_patch`` …; input = the parsed arguments), ``custom_tool_call`` ``{name, input}`` (input becomes
``{"input": …}``, the ``apply_patch`` form) and ``local_shell_call`` (tool ``local_shell``). A matching
``function_call_output`` / ``custom_tool_call_output`` by ``call_id`` gives the output; the exit code is read
from its JSON ``metadata.exit_code`` or its ``Exit code: N`` / ``Process exited with code N`` header, and
from ``exec_command_end``; ``patch_apply_end.success`` gives ``ok``. Assistant ``output_text`` messages are
the round texts (reasoning items are not kept). ``task_complete`` / ``turn_aborted`` set ``stop_reason``.
Lacks: unified diffs (``apply_patch`` carries Codex's own ``*** Update File:`` patch text in its input).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ingest.importers._common import (
    Origin,
    TurnDraft,
    blocks_text,
    build_events,
    json_args,
    jsonl_records,
    latest,
    obj,
    parse_time,
    partial,
    str_or_empty,
)
from ingest.schema import TurnEvent

FORMAT = "codex"
_ITEM_TYPES = frozenset(
    {
        "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
        "local_shell_call", "reasoning", "web_search_call",
    }
)  # fmt: skip
_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions",
    "<INSTRUCTIONS>",
)
_EXIT = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)", re.MULTILINE)
_BODY = re.compile(r"^Output:\n", re.MULTILINE)


@dataclass
class _Session:
    turns: list[tuple[TurnDraft, list[float | None]]] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    cwd: str = ""


def parse(data: bytes, *, source: str, owner: str, project: str | None = None) -> list[TurnEvent]:
    """One event per user prompt of the rollout; raises UnreadableLog (PartialLog if some lines were bad)."""
    records, problems = jsonl_records(data)
    normalized = [n for _, r in records if (n := _normalize(r)) is not None]
    typed_prompts = any(
        kind == "event_msg" and str_or_empty(p.get("type")) == "user_message" for _, kind, p in normalized
    )
    session = _Session()
    for stamp, kind, payload in normalized:
        _take(session, stamp, kind, payload, typed_prompts=typed_prompts)

    drafts = []
    for draft, times in session.turns:
        if draft.tool_events or draft.round_texts:
            draft.ts = latest(*times)
            drafts.append(draft)
    session_id = str_or_empty(session.meta.pop("session_id", None))
    origin = Origin(
        format=FORMAT,
        identity=session_id or "",
        owner=owner,
        project_key=project or session.cwd or source,
        workspace=session.cwd,
        meta={"harness": FORMAT, "session_id": session_id or None, **session.meta},
    )
    events = build_events(origin, drafts) if drafts else []
    return partial(events, problems) if problems else events


def _normalize(record: Any) -> tuple[float | None, str, dict[str, Any]] | None:
    """``(time, kind, payload)`` for a record of either rollout generation; None for bookkeeping lines."""
    if not isinstance(record, dict):
        return None
    stamp = parse_time(record.get("timestamp"))
    if isinstance(record.get("payload"), dict) and isinstance(record.get("type"), str):
        return stamp, record["type"], record["payload"]
    if str_or_empty(record.get("type")) in _ITEM_TYPES:
        return stamp, "response_item", record
    if "instructions" in record or ("id" in record and "timestamp" in record and "type" not in record):
        return stamp, "session_meta", record
    return None


def _take(
    session: _Session, stamp: float | None, kind: str, payload: dict[str, Any], *, typed_prompts: bool
) -> None:
    item = str_or_empty(payload.get("type"))
    if kind == "session_meta":
        session.meta["session_id"] = str_or_empty(payload.get("id")) or None
        session.cwd = str_or_empty(payload.get("cwd")) or session.cwd
        git = obj(payload.get("git"))
        session.meta["commit"] = str_or_empty(git.get("commit_hash")) or None
        session.meta["git_branch"] = str_or_empty(git.get("branch")) or None
        session.meta["repository"] = str_or_empty(git.get("repository_url")) or None
        session.meta["harness_version"] = str_or_empty(payload.get("cli_version")) or None
    elif kind == "turn_context":
        session.cwd = str_or_empty(payload.get("cwd")) or session.cwd
        session.meta["model"] = str_or_empty(payload.get("model")) or session.meta.get("model")
    elif kind == "event_msg":
        _event(session, stamp, item, payload)
    elif kind == "response_item":
        if item == "message":
            role = str_or_empty(payload.get("role"))
            said = blocks_text(payload.get("content")).strip()
            if role == "user" and not typed_prompts and said and not said.startswith(_INJECTED):
                session.turns.append((TurnDraft(user_message=said), [stamp]))
            elif role == "assistant" and said and session.turns:
                session.turns[-1][0].round_texts.append(said)
                session.turns[-1][1].append(stamp)
        elif item in {"function_call", "custom_tool_call", "local_shell_call"}:
            _call(session, stamp, item, payload)
        elif item in {"function_call_output", "custom_tool_call_output"}:
            _output(session, stamp, payload)


def _event(session: _Session, stamp: float | None, item: str, payload: dict[str, Any]) -> None:
    if item == "user_message":
        session.turns.append((TurnDraft(user_message=str_or_empty(payload.get("message"))), [stamp]))
        return
    if not session.turns:
        return
    draft, times = session.turns[-1]
    call = session.calls.get(str_or_empty(payload.get("call_id")))
    if item == "exec_command_end" and call is not None:
        code = payload.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            call.setdefault("exit_code", code)
    elif item == "patch_apply_end" and call is not None and isinstance(payload.get("success"), bool):
        call["ok"] = payload["success"]
    elif item == "task_complete":
        draft.meta.setdefault("stop_reason", "completed")
        times.append(stamp)
    elif item == "turn_aborted":
        draft.meta["stop_reason"] = "aborted: " + (str_or_empty(payload.get("reason")) or "unknown")
        times.append(stamp)


def _call(session: _Session, stamp: float | None, item: str, payload: dict[str, Any]) -> None:
    if not session.turns:
        session.turns.append((TurnDraft(), [stamp]))
    draft, times = session.turns[-1]
    times.append(stamp)
    if item == "custom_tool_call":
        tool, arguments = str_or_empty(payload.get("name")) or "custom_tool", {"input": payload.get("input")}
    elif item == "local_shell_call":
        action = obj(payload.get("action"))
        arguments = {"command": action.get("command"), "workdir": action.get("working_directory")}
        tool = "local_shell"
    else:
        tool, arguments = (
            str_or_empty(payload.get("name")) or "function",
            dict(json_args(payload.get("arguments"))),
        )
    event: dict[str, Any] = {
        "tool": tool,
        "input": {k: v for k, v in arguments.items() if v is not None},
        "ts": stamp,
    }
    draft.tool_events.append(event)
    call_id = str_or_empty(payload.get("call_id")) or str_or_empty(payload.get("id"))
    if call_id:
        session.calls[call_id] = event


def _output(session: _Session, stamp: float | None, payload: dict[str, Any]) -> None:
    event = session.calls.get(str_or_empty(payload.get("call_id")))
    if event is None:
        return
    if session.turns:
        session.turns[-1][1].append(stamp)
    raw = payload.get("output")
    output = (
        raw
        if isinstance(raw, str)
        else blocks_text(obj(raw).get("content") if isinstance(raw, dict) else raw)
    )
    wrapped = None
    if output.startswith("{"):
        try:
            wrapped = orjson.loads(output)
        except orjson.JSONDecodeError:
            wrapped = None
    if isinstance(wrapped, dict) and "output" in wrapped:
        output = str_or_empty(wrapped.get("output")) or blocks_text(wrapped.get("output"))
        code = obj(wrapped.get("metadata")).get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            event["exit_code"] = code
    else:
        header = _EXIT.search(output[:400])
        if header is not None:
            event["exit_code"] = int(header.group(1))
            body = _BODY.search(output)
            if body is not None and body.start() < 600:
                output = output[body.end() :]
    if isinstance(payload.get("success"), bool):
        event["ok"] = payload["success"]
    event["output"] = output
