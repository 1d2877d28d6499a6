"""SWE-agent trajectories (``*.traj``, classic and the v1 function-calling form) → one turn event.

The whole run is one turn. ``trajectory[]`` holds ``{action, observation, thought, state}`` steps;
``state`` (a dict, or a JSON string in older files) names ``working_dir`` and ``open_file``. Actions are
SWE-agent's own commands (``open``, ``create``, ``edit 12:14 … end_of_edit``, ``edit 'search' 'replace'``,
``insert``, ``str_replace_editor``, ``submit`` …; tool = the command's name) or plain shell (tool ``bash``).
Windowed edits name no file: the importer tracks the open file (``open`` / ``create`` and the editor's
``[File: … (N lines total)]`` banner) and puts it in ``input.path``, resolved against ``working_dir``. In
the v1 form, ``history[]`` assistant messages carry the ``tool_calls`` whose JSON arguments are used as
the input. ``ok`` is set for edits from the editor's own words (``File updated`` / ``syntax error(s)``).
Lacks: exit codes (errors are only text), any timestamp, a model name in classic files.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from pathlib import PurePosixPath
from typing import Any

from ingest.importers._common import (
    Origin,
    TurnDraft,
    UnreadableLog,
    arr,
    between,
    blocks_text,
    build_events,
    json_args,
    loads,
    obj,
    repo_of_instance,
    sha,
    str_or_empty,
)
from ingest.schema import TurnEvent

FORMAT = "swe-agent"
COMMANDS = frozenset(
    {
        "open", "goto", "scroll_up", "scroll_down", "create", "submit", "search_dir", "search_file",
        "find_file", "edit", "insert", "append", "str_replace_editor", "filemap", "view",
    }
)  # fmt: skip
_FILE_TOOLS = frozenset({"edit", "insert", "append"})  # act on the open file
_BANNER = re.compile(r"\[File: (.+?) \(\d+ lines total\)\]")
_RANGE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")
_EDIT_FAILED = re.compile(
    r"proposed edit has introduced new syntax error|No replacement was performed|did not appear verbatim|"
    r"No exact match|not found in the file|Usage: |Error: "
)
_EDIT_DONE = re.compile(
    r"File updated|Text replaced|Replaced \d+ occurrence|has been edited|created successfully"
)


def parse(data: bytes, *, source: str, owner: str, project: str | None = None) -> list[TurnEvent]:
    """The run as one turn event; raises UnreadableLog when ``data`` is not a SWE-agent trajectory."""
    doc = loads(data, "SWE-agent trajectory")
    if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list):
        raise UnreadableLog("SWE-agent trajectory must be an object with a trajectory array")
    info = obj(doc.get("info"))
    replay = obj(doc.get("replay_config"))
    history = [m for m in arr(doc.get("history")) if isinstance(m, dict)]
    instance_id = PurePosixPath(source.replace("\\", "/")).name.removesuffix(".traj")
    steps = [s for s in doc["trajectory"] if isinstance(s, dict)]
    calls = [m.get("tool_calls") for m in history if m.get("role") == "assistant" and m.get("action")]

    draft = TurnDraft(user_message=_task(history, replay))
    workdirs = [_state(s).get("working_dir") for s in steps]
    workspace = next((w for w in workdirs if isinstance(w, str) and w.strip()), "")
    open_file = ""
    for i, step in enumerate(steps):
        cwd = str_or_empty(_state(step).get("working_dir")) or workspace
        action = str_or_empty(step.get("action")).strip()
        thought = str_or_empty(step.get("thought")) or str_or_empty(step.get("response"))
        if thought.strip():
            draft.round_texts.append(thought.strip())
        if not action:
            continue
        call = _function_call(calls[i] if len(calls) == len(steps) else None)
        tool, arguments = call if call is not None else _classic(action)
        observation = str_or_empty(step.get("observation"))
        event: dict[str, Any] = {"tool": tool, "input": arguments, "output": observation}
        if tool == "bash":
            arguments.setdefault("command", action)
        else:
            arguments["action"] = action
            open_file = _track_file(tool, arguments, observation, cwd, open_file)
            edit = tool in _FILE_TOOLS or (
                tool == "str_replace_editor" and arguments.get("command") != "view"
            )
            if edit and _EDIT_FAILED.search(observation[:2000]):
                event["ok"] = False
            elif edit and _EDIT_DONE.search(observation):
                event["ok"] = True
        draft.tool_events.append(event)

    agent = obj(replay.get("agent"))
    meta = {
        "harness": FORMAT,
        "model": str_or_empty(obj(agent.get("model")).get("name")) or None,
        "session_id": instance_id or None,
        "stop_reason": str_or_empty(info.get("exit_status")) or None,
        "commit": sha(str_or_empty(obj(obj(replay.get("env")).get("repo")).get("base_commit"))),
    }
    meta["commit_start"] = meta["commit"]  # the instance's checkout starts at its base commit
    origin = Origin(
        format=FORMAT,
        identity=instance_id or "",
        owner=owner,
        project_key=project or _repo(workspace, instance_id) or source,
        workspace=workspace,
        meta=meta,
    )
    return build_events(origin, [draft])


def _state(step: dict[str, Any]) -> dict[str, Any]:
    state = step.get("state")
    return json_args(state) if isinstance(state, str) else obj(state)


def _task(history: list[dict[str, Any]], replay: dict[str, Any]) -> str:
    """The issue text: from the first non-demonstration user message, else the replay config."""
    for message in history:
        if message.get("role") != "user" or message.get("is_demo"):
            continue
        content = blocks_text(message.get("content"))
        issue = between(content, "ISSUE:\n", "\n\nINSTRUCTIONS:")
        if issue is None:
            issue = between(content, "<pr_description>", "</pr_description>")
        return issue if issue is not None else content
    return str_or_empty(obj(replay.get("problem_statement")).get("text"))


def _repo(workspace: str, instance_id: str) -> str | None:
    """``owner/repo`` from a ``/owner__repo`` working directory, else from the instance id."""
    mounted = repo_of_instance(workspace.strip("/")) if workspace.count("/") == 1 else None
    return mounted or repo_of_instance(instance_id)


def _function_call(tool_calls: Any) -> tuple[str, dict[str, Any]] | None:
    """Tool name and arguments of a v1 assistant message's single function call."""
    for call in arr(tool_calls):
        function = obj(obj(call).get("function"))
        name = str_or_empty(function.get("name"))
        if name:
            return name, dict(json_args(function.get("arguments")))
    return None


def _words(rest: str) -> list[str]:
    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


def _classic(action: str) -> tuple[str, dict[str, Any]]:
    """Tool name and arguments of a text action (``edit 4:4\\n…\\nend_of_edit``, ``open "f" 10`` …)."""
    name, _, rest = action.partition(" ") if " " in action.split("\n", 1)[0] else action.partition("\n")
    if name not in COMMANDS:
        return "bash", {"command": action}
    first, _, body = rest.partition("\n")
    arguments: dict[str, Any] = {}
    if name in {"open", "create"}:
        words = _words(first)
        if words:
            arguments["path"] = words[0]
    elif name in {"edit", "insert", "append"}:
        span = _RANGE.match(first)
        if span is not None or (name != "edit" and first.strip().isdigit()):
            if span is not None:
                arguments["start_line"], arguments["end_line"] = int(span.group(1)), int(span.group(2))
            else:
                arguments["line"] = int(first.strip())
            arguments["new_str"] = re.sub(r"\n?end_of_\w+\s*\Z", "", body)
        elif name == "edit":
            words = _words(rest)
            if len(words) >= 2:
                arguments["old_str"], arguments["new_str"] = words[0], words[1]
        else:
            words = _words(rest)
            if words:
                arguments["new_str"] = words[0]
    elif name == "str_replace_editor":
        words = _words(rest)
        arguments.update(zip(("command", "path"), words[:2], strict=False))
        for flag, value in zip(words[2::2], words[3::2], strict=False):
            arguments[flag.lstrip("-")] = value
    return name, arguments


def _track_file(tool: str, arguments: dict[str, Any], observation: str, cwd: str, open_file: str) -> str:
    """Resolve the file a command acts on into ``arguments["path"]``; returns the editor's open file."""
    given = str_or_empty(arguments.get("path")) or str_or_empty(arguments.get("filename"))
    if tool in {"open", "create"} and given:
        open_file = _resolve(given, cwd)
        arguments["path"] = open_file
    elif tool == "str_replace_editor" and given:
        arguments["path"] = _resolve(given, cwd)
    elif tool in _FILE_TOOLS and open_file:
        arguments["path"] = open_file
    banner = _BANNER.search(observation)
    if banner is not None and tool in {"open", "create", *_FILE_TOOLS}:
        open_file = _resolve(banner.group(1).strip(), cwd)
        if tool in _FILE_TOOLS:
            arguments["path"] = open_file
    return open_file


def _resolve(path: str, cwd: str) -> str:
    path = path.strip().strip("\"'")
    if path.startswith("/") or not cwd:
        return posixpath.normpath(path)
    return posixpath.normpath(posixpath.join(cwd, path))
