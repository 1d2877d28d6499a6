"""OpenHands logs → turn events: evaluation ``output.jsonl``, resolver ``output.jsonl``, exported event lists.

Events carry ``id``, ``timestamp``, ``source`` and either ``action`` (``run``, ``edit``, ``read``,
``run_ipython``, ``think``, ``finish``, ``message`` …) with ``args``, or ``observation`` with ``cause`` (the
id of its action), ``content`` and ``extras`` (``metadata.exit_code``, edit ``diff``). The older resolver
history has no ids: action and observation dicts alternate and the arguments sit at the top level.
Tool = the action name (``run``, ``edit``, ``read``, ``run_ipython`` …); ``input`` = its arguments minus
bookkeeping (the ``file_editor(**{…})`` call of ``translated_ipython_code`` is unpacked when an edit's
``command`` is missing). ``exit_code`` -1 (command still running / timed out) is recorded as no exit code.
An edit whose observation starts ``ERROR:`` (``No replacement was performed``) has ``ok`` false.
An evaluation or resolver line is one turn; an event list is one turn per user message. An evaluation line's
``test_result`` ``resolved`` (the benchmark's own tests) becomes the turn's verdict (``importers.verdicts``).
Lacks: timestamps in resolver output; a project name in event lists (the workspace stands in).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ingest.importers._common import (
    Origin,
    TurnDraft,
    UnreadableLog,
    arr,
    between,
    blocks_text,
    build_events,
    jsonl_records,
    latest,
    loads,
    obj,
    parse_time,
    partial,
    repo_of_instance,
    sha,
    str_or_empty,
)
from ingest.importers.verdicts import benchmark_verdict, openhands_resolved
from ingest.schema import TurnEvent

FORMAT = "openhands"
_NOT_TOOLS = frozenset({"system", "recall", "change_agent_state", "null", "message", "think", "finish"})
_SKIP_OBSERVATIONS = frozenset({"null", "agent_state_changed", "recall", "think", "user_rejected"})
_BOOKKEEPING = frozenset(
    {
        "thought", "impl_source", "translated_ipython_code", "is_input", "blocking", "is_static", "hidden",
        "confirmation_state", "security_risk", "keep_prompt", "is_confirmed", "action_risk",
        "kernel_init_code", "include_extra", "action", "wait_for_response", "image_urls", "images_urls",
        "timeout",
    }
)  # fmt: skip
_EDITOR_CALL = re.compile(r"file_editor\(\*\*(\{.*\})\)", re.DOTALL)
_SKILL_EDIT = re.compile(
    r"\b(?:edit_file_by_replace|create_file|append_file|insert_content_at_line|edit_file|replace_lines)\(\s*"
    r"(?:file_name\s*=\s*)?(['\"])(?P<path>[^'\"\n]+)\1"
)
_PY_EDIT_FAILED = re.compile(r"\[Your proposed edit has introduced new syntax error|\[No exact match found")
_PY_EDIT_DONE = re.compile(r"lines total after edit\)\]|\[File updated")
_EDIT_DONE = re.compile(r"has been edited|File created successfully|I edited the file")


def parse(data: bytes, *, source: str, owner: str, project: str | None = None) -> list[TurnEvent]:
    """Turn events from any of the three OpenHands shapes; raises UnreadableLog for anything else."""
    stripped = data.lstrip()
    if stripped.startswith(b"["):
        doc = loads(data, "OpenHands event list")
        return _event_list(arr(doc), owner=owner, project=project)
    records, problems = jsonl_records(data)
    events: list[TurnEvent] = []
    for number, record in records:
        if not isinstance(record, dict) or not isinstance(record.get("history"), list):
            problems.append(f"line {number}: not an OpenHands output record (no history array)")
            continue
        if "issue" in record:
            events.extend(_resolver(record, source=f"{source}:{number}", owner=owner, project=project))
        else:
            events.extend(_evaluation(record, source=f"{source}:{number}", owner=owner, project=project))
    return partial(events, problems)


def _evaluation(record: dict[str, Any], *, source: str, owner: str, project: str | None) -> list[TurnEvent]:
    instance = obj(record.get("instance"))
    instance_id = str_or_empty(record.get("instance_id")) or str_or_empty(instance.get("instance_id"))
    instruction = str_or_empty(record.get("instruction"))
    draft = _single_turn(record["history"])
    draft.user_message = (
        str_or_empty(instance.get("problem_statement"))
        or between(instruction, "<issue_description>", "</issue_description>")
        or instruction
        or draft.user_message
    )
    error = str_or_empty(record.get("error"))
    if error:
        draft.meta["stop_reason"] = error
    resolved = openhands_resolved(record)
    if resolved is not None:
        state = "resolved" if resolved else "not resolved"
        draft.meta["verdict"] = benchmark_verdict(resolved, f"OpenHands test_result: {state}")
    llm = obj(obj(record.get("metadata")).get("llm_config"))
    origin = Origin(
        format=FORMAT,
        identity=instance_id,
        owner=owner,
        project_key=project or str_or_empty(instance.get("repo")) or repo_of_instance(instance_id) or source,
        workspace=between(instruction, "<uploaded_files>", "</uploaded_files>") or draft.meta.pop("cwd", ""),
        meta={
            "harness": FORMAT,
            "model": str_or_empty(llm.get("model")) or None,
            "session_id": instance_id or None,
            "commit": str_or_empty(instance.get("base_commit")) or None,
            "commit_start": sha(str_or_empty(instance.get("base_commit"))),  # the instance starts there
        },
    )
    draft.meta.pop("cwd", None)
    return build_events(origin, [draft])


def _resolver(record: dict[str, Any], *, source: str, owner: str, project: str | None) -> list[TurnEvent]:
    issue = obj(record.get("issue"))
    repo = "/".join(p for p in (str_or_empty(issue.get("owner")), str_or_empty(issue.get("repo"))) if p)
    number = issue.get("number")
    history: list[Any] = []
    for item in record["history"]:  # the oldest files keep [action, observation] pairs
        history.extend(item if isinstance(item, list) else [item])
    draft = _single_turn(history)
    title, body = str_or_empty(issue.get("title")), str_or_empty(issue.get("body"))
    draft.user_message = "\n\n".join(p for p in (title, body) if p) or draft.user_message
    error = str_or_empty(record.get("error"))
    if error:
        draft.meta["stop_reason"] = error
    draft.meta.pop("cwd", None)
    identity = f"{repo}#{number}" if repo and number is not None else ""
    origin = Origin(
        format=FORMAT,
        identity=identity,
        owner=owner,
        project_key=project or repo or source,
        workspace="/workspace",
        meta={
            "harness": FORMAT,
            "session_id": identity or None,
            "commit": str_or_empty(record.get("base_commit")) or None,
            "commit_start": sha(str_or_empty(record.get("base_commit"))),
            "issue_type": str_or_empty(record.get("issue_type")) or None,
        },
    )
    return build_events(origin, [draft])


def _event_list(events: list[Any], *, owner: str, project: str | None) -> list[TurnEvent]:
    if not all(isinstance(e, dict) for e in events):
        raise UnreadableLog("OpenHands event list must be an array of event objects")
    drafts = _turns(events, split=True)
    cwd = next((d.meta["cwd"] for d in drafts if d.meta.get("cwd")), "/workspace")
    for draft in drafts:
        draft.meta.pop("cwd", None)
    origin = Origin(
        format=FORMAT,
        identity="",  # an exported event list names no session: the turn's content is its identity
        owner=owner,
        project_key=project or cwd,
        workspace=cwd,
        meta={"harness": FORMAT},
    )
    return build_events(origin, drafts)


def _single_turn(history: list[Any]) -> TurnDraft:
    drafts = _turns([e for e in history if isinstance(e, dict)], split=False)
    return drafts[0] if drafts else TurnDraft()


def _turns(events: list[dict[str, Any]], *, split: bool) -> list[TurnDraft]:
    """Group events into turns (a new one per user message when ``split``) and pair observations."""
    drafts: list[TurnDraft] = []
    by_id: dict[Any, dict[str, Any]] = {}
    pending: dict[str, Any] | None = None
    times: list[float | None] = []

    def current() -> TurnDraft:
        if not drafts:
            drafts.append(TurnDraft())
        return drafts[-1]

    for event in events:
        stamp = parse_time(event.get("timestamp"))
        args = obj(event.get("args")) if "args" in event else event
        action = str_or_empty(event.get("action"))
        if action:
            if action == "message" and event.get("source", "user") == "user":
                message = str_or_empty(args.get("content")) or str_or_empty(event.get("message"))
                if drafts and (not split or _blank(drafts[-1])):
                    drafts[-1].user_message = drafts[-1].user_message or message
                else:
                    if drafts:
                        drafts[-1].ts = latest(*times)
                    drafts.append(TurnDraft(user_message=message))
                    times = []
                times.append(stamp)
                continue
            draft = current()
            times.append(stamp)
            thought = str_or_empty(args.get("thought")) or (
                str_or_empty(event.get("message")) if action == "message" else ""
            )
            if action == "finish":
                thought = (
                    str_or_empty(args.get("final_thought")) or thought or str_or_empty(event.get("message"))
                )
                draft.meta["stop_reason"] = "finish"
                if args.get("task_completed") is not None:
                    draft.meta["task_completed"] = str(args["task_completed"])
            elif action == "message":
                thought = thought or str_or_empty(args.get("content"))
            if thought.strip():
                draft.round_texts.append(thought.strip())
            if action in _NOT_TOOLS:
                continue
            pending = {"tool": action, "input": _arguments(action, args), "ts": stamp}
            draft.tool_events.append(pending)
            if "id" in event:
                by_id[event["id"]] = pending
            continue
        observation = str_or_empty(event.get("observation"))
        if not observation or observation in _SKIP_OBSERVATIONS:
            continue
        draft = current()
        times.append(stamp)
        tool = by_id.get(event["cause"]) if "cause" in event else pending
        if tool is None:
            if observation != "error":
                continue
            tool = {"tool": "error", "input": {}, "ts": stamp}
            draft.tool_events.append(tool)
        pending = None
        _observe(tool, observation, event, draft)
    if drafts:
        drafts[-1].ts = latest(*times)
    return drafts


def _blank(draft: TurnDraft) -> bool:
    return not (draft.user_message or draft.tool_events or draft.round_texts)


def _arguments(action: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool's input: the action's arguments without OpenHands' bookkeeping fields or empty defaults."""
    arguments = {k: v for k, v in args.items() if k not in _BOOKKEEPING and v is not None}
    if action == "edit" and "command" not in arguments:
        call = _EDITOR_CALL.search(str_or_empty(args.get("translated_ipython_code")))
        if call is not None:
            try:
                unpacked = ast.literal_eval(call.group(1))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                unpacked = None
            if isinstance(unpacked, dict):
                arguments.update({str(k): v for k, v in unpacked.items() if _json_value(v)})
    if action == "read" and arguments.get("start") == 0 and arguments.get("end") == -1:
        del arguments["start"], arguments["end"]  # the defaults: the whole file
    if action == "edit" and "command" in arguments:
        for key in ("start", "end", "content"):  # the LLM-edit fields, unused by the editor commands
            arguments.pop(key, None)
    if action == "run_ipython":
        edit = _SKILL_EDIT.search(str_or_empty(arguments.get("code")))
        if edit is not None:
            arguments["path"] = edit.group("path")
    return arguments


def _json_value(value: Any) -> bool:
    """Whether a Python literal is a plain JSON value (no None, bytes, sets, tuples or complex numbers)."""
    if isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list):
        return all(_json_value(v) for v in value)
    return isinstance(value, dict) and all(isinstance(k, str) and _json_value(v) for k, v in value.items())


def _observe(tool: dict[str, Any], observation: str, event: dict[str, Any], draft: TurnDraft) -> None:
    """Fill a tool event from its observation."""
    extras = obj(event.get("extras"))
    content = blocks_text(event.get("content"))
    tool["output"] = content
    metadata = obj(extras.get("metadata"))
    code = metadata.get("exit_code", extras.get("exit_code", event.get("exit_code")))
    if isinstance(code, int) and not isinstance(code, bool) and code != -1:
        tool["exit_code"] = code
    if isinstance(event.get("success"), bool):
        tool["ok"] = event["success"]
    working_dir = str_or_empty(metadata.get("working_dir"))
    if working_dir and not draft.meta.get("cwd"):
        draft.meta["cwd"] = working_dir
    if observation == "error":
        tool["ok"] = False
    elif observation == "edit":
        diff = str_or_empty(extras.get("diff")) or (content if content.startswith("--- ") else "")
        if diff:
            tool["diff"] = diff
        if content.lstrip().startswith("ERROR:"):
            tool["ok"] = False
        elif diff or _EDIT_DONE.search(content[:500]):
            tool["ok"] = True
    elif observation == "run_ipython" and "path" in tool["input"]:
        if _PY_EDIT_FAILED.search(content[:500]):
            tool["ok"] = False
        elif _PY_EDIT_DONE.search(content[:500]):
            tool["ok"] = True
