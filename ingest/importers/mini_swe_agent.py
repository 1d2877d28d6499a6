"""mini-swe-agent trajectories (``*.traj.json``, ``trajectory_format: mini-swe-agent-1``) → one turn event.

The whole run is one turn. ``messages[]`` is an OpenAI-style chat: each assistant message holds one
```bash block (the action, tool ``bash``) and the next user message is its observation,
``<returncode>N</returncode><output>…</output>`` (long outputs: ``<output_head>``/``<output_tail>``). The
final submission message has no return code. The task is the ``<pr_description>`` of the first user
message. Times: each assistant message's ``extra.response.created`` (unix seconds).
Lacks: edit tools (edits are ``sed -i`` / heredocs inside bash), a base commit, per-observation times.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.importers._common import (
    Origin,
    TurnDraft,
    UnreadableLog,
    between,
    blocks_text,
    build_events,
    latest,
    loads,
    obj,
    parse_time,
    repo_of_instance,
    str_or_empty,
)
from ingest.schema import TurnEvent

FORMAT = "mini-swe-agent"
# mini-swe-agent's own action regex (its default config; newer configs name the block mswea_bash_command)
_ACTION = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_ELIDED = re.compile(r"<elided_chars>\s*(.*?)\s*</elided_chars>", re.DOTALL)
_TIMED_OUT = "timed out and has been killed"


def parse(data: bytes, *, source: str, owner: str, project: str | None = None) -> list[TurnEvent]:
    """The run as one turn event; raises UnreadableLog when ``data`` is not a mini-swe-agent trajectory."""
    doc = loads(data, "mini-swe-agent trajectory")
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise UnreadableLog("mini-swe-agent trajectory must be an object with a messages array")
    info = obj(doc.get("info"))
    config = obj(info.get("config"))
    instance_id = str_or_empty(doc.get("instance_id"))
    messages = [m for m in doc["messages"] if isinstance(m, dict)]

    draft = TurnDraft()
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    if first_user is not None:
        task = blocks_text(first_user.get("content"))
        described = between(task, "<pr_description>", "</pr_description>")
        if described is not None:
            described = re.sub(r"\AConsider the following PR description:\s*", "", described)
        draft.user_message = described if described is not None else task

    pending: dict[str, Any] | None = None
    times: list[float | None] = []
    for message in messages:
        role = message.get("role")
        content = blocks_text(message.get("content"))
        if role == "assistant":
            created = parse_time(obj(obj(message.get("extra")).get("response")).get("created"))
            times.append(created)
            actions = _ACTION.findall(content)
            thought = _ACTION.sub("", content).strip()
            if thought:
                draft.round_texts.append(thought)
            pending = None
            if len(actions) == 1:  # mini-swe-agent refuses any other count with a format error
                pending = {"tool": "bash", "input": {"command": actions[0]}, "ts": created}
                draft.tool_events.append(pending)
        elif role == "user" and pending is not None:
            _observe(pending, content)
            pending = None

    draft.ts = latest(*times)
    model = str_or_empty(obj(config.get("model")).get("model_name")) or None
    meta = {
        "harness": FORMAT,
        "model": model,
        "session_id": instance_id or None,
        "stop_reason": str_or_empty(info.get("exit_status")) or None,
    }
    origin = Origin(
        format=FORMAT,
        identity=instance_id or "",
        owner=owner,
        project_key=project or repo_of_instance(instance_id) or instance_id or source,
        workspace=str_or_empty(obj(config.get("environment")).get("cwd")),
        meta=meta,
    )
    return build_events(origin, [draft])


def _observe(tool: dict[str, Any], observation: str) -> None:
    """Fill a bash tool event from the observation message that answers it."""
    code = _RETURNCODE.search(observation)
    if code is not None:
        tool["exit_code"] = int(code.group(1))
    if "<output_head>" in observation:
        head = between(observation, "<output_head>", "</output_head>") or ""
        tail = between(observation, "<output_tail>", "</output_tail>") or ""
        elided = _ELIDED.search(observation)
        marker = elided.group(1) if elided else "characters elided"
        tool["output"] = f"{head}\n[... {marker} ...]\n{tail}"
    elif "<output>" in observation:
        start = observation.index("<output>") + len("<output>")
        end = observation.rfind("</output>")
        tool["output"] = observation[start : end if end >= start else None].strip("\n")
    else:
        tool["output"] = observation  # the submission (git diff) or a harness message
    if code is None and _TIMED_OUT in observation:
        tool["ok"] = False
