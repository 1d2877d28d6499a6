"""Claude Code session JSONL (``~/.claude/projects/<cwd>/<sessionId>.jsonl``) → one turn event per prompt.

Records have ``type`` user|assistant|system|summary|…, ``uuid``/``parentUuid``, ``timestamp``, ``cwd``,
``sessionId``. One API response is split over several assistant records sharing ``message.id``; their
content blocks are merged (a block logged twice is kept once). ``tool_use{id,name,input}`` blocks become
tool events with the native tool name (``Bash``, ``Edit``, ``Write``, ``MultiEdit``, ``Read`` …) and input;
the ``tool_result{tool_use_id,content,is_error}`` in a later user record fills ``output`` and ``ok``
(``not is_error``); ``exit_code`` is read from a ``Exit code N`` result (success states no code); the
record's ``toolUseResult.structuredPatch`` becomes the edit ``diff``. A user record with text (not a tool
result, not ``isMeta``, not local-command output) opens a turn; ``[Request interrupted by user…]`` ends
one with ``stop_reason: interrupted``. Subagent work (``isSidechain: true``, inline or in ``agent-*.jsonl``
files) is attached to the turn that spawned it: the tool result naming its ``agentId``, else the
``Task`` call whose prompt it received, else the turn running at its first timestamp. Its tool events
follow the spawning call and carry ``subagent: <agentId>``. ``thinking`` blocks are not kept.
Lacks: exit codes of successful commands, commits, a project name (the ``cwd`` is the project key).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ingest.importers._common import (
    Origin,
    TurnDraft,
    arr,
    blocks_text,
    build_events,
    jsonl_records,
    latest,
    obj,
    parse_time,
    partial,
    str_or_empty,
)
from ingest.schema import TurnEvent

FORMAT = "claude-code"
_EXIT_CODE = re.compile(r"\A\s*(?:Error: )?Exit code (-?\d+)")
_INTERRUPTED = "[Request interrupted by user"
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_SPAWNERS = frozenset({"Task", "Agent"})


@dataclass
class _Turn:
    draft: TurnDraft
    times: list[float | None] = field(default_factory=list)


@dataclass
class _Chain:
    """The turns of one conversation chain and the lookups that join results and subagents to them."""

    turns: list[_Turn] = field(default_factory=list)
    tools: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)  # tool_use id → (turn, event)
    agents: dict[str, str] = field(default_factory=dict)  # agentId → spawning tool_use id
    seen: set[tuple[str, str]] = field(default_factory=set)  # (message id, block key) already merged
    model: str | None = None


def parse(
    data: bytes,
    *,
    source: str,
    owner: str,
    project: str | None = None,
    sidechains: Sequence[bytes] = (),
) -> list[TurnEvent]:
    """One event per user prompt of the session in ``data``, with ``sidechains`` (``agent-*.jsonl`` bytes)
    attached; raises UnreadableLog (PartialLog when only some lines were bad)."""
    records, problems = jsonl_records(data)
    rows = [r for _, r in records if isinstance(r, dict)]
    main = [r for r in rows if not r.get("isSidechain")]
    side_groups = _group_sidechains([r for r in rows if r.get("isSidechain")])
    for blob in sidechains:
        side_records, _ = jsonl_records(blob)
        side_groups.extend(_group_sidechains([r for _, r in side_records if isinstance(r, dict)]))

    chain = _Chain()
    for record in main:
        _take(chain, record, subagent=None)
    for agent_id, group in side_groups:
        _attach(chain, agent_id, group)

    first = next((r for r in rows if str_or_empty(r.get("cwd"))), {})
    cwd = str_or_empty(first.get("cwd"))
    session_id = next(
        (str_or_empty(r.get("sessionId")) for r in rows if str_or_empty(r.get("sessionId"))), ""
    )
    drafts = []
    for turn in chain.turns:
        if not (turn.draft.tool_events or turn.draft.round_texts):
            continue  # a local command (/clear …) or a prompt that got no answer
        turn.draft.ts = latest(*turn.times)
        drafts.append(turn.draft)
    origin = Origin(
        format=FORMAT,
        identity=session_id or "",
        owner=owner,
        project_key=project or cwd or source,
        workspace=cwd,
        meta={
            "harness": FORMAT,
            "model": chain.model,
            "session_id": session_id or None,
            "git_branch": str_or_empty(first.get("gitBranch")) or None,
            "harness_version": str_or_empty(first.get("version")) or None,
        },
    )
    events = build_events(origin, drafts) if drafts else []
    return partial(events, problems) if problems else events


def is_sidechain_log(data: bytes) -> bool:
    """Whether ``data`` is a subagent log (an ``agent-*.jsonl`` file), judged by its first record."""
    records, _ = jsonl_records(data.split(b"\n", 20)[0] if data else b"")
    return bool(records) and bool(obj(records[0][1]).get("isSidechain"))


def session_of(data: bytes) -> str | None:
    """The ``sessionId`` named by the first record that has one, looking at the first 20 lines."""
    records, _ = jsonl_records(b"\n".join(data.split(b"\n", 20)[:20]))
    return next(
        (str_or_empty(obj(r).get("sessionId")) for _, r in records if str_or_empty(obj(r).get("sessionId"))),
        None,
    )


def _group_sidechains(records: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Sidechain records split into one group per subagent (by ``agentId``, else by chain root)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    current = ""
    for record in records:
        agent = str_or_empty(record.get("agentId"))
        if not agent:
            if record.get("parentUuid") is None or not current:
                current = f"sidechain-{str_or_empty(record.get('uuid')) or len(groups)}"
            agent = current
        groups.setdefault(agent, []).append(record)
    return list(groups.items())


def _take(chain: _Chain, record: dict[str, Any], *, subagent: str | None) -> None:
    """Fold one record into the chain: a prompt opens a turn, assistant blocks and results fill it."""
    kind = record.get("type")
    message = obj(record.get("message"))
    stamp = parse_time(record.get("timestamp"))
    if kind == "user":
        content = message.get("content")
        results = [b for b in arr(content) if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            for block in results:
                single = record.get("toolUseResult") if len(results) == 1 else None
                _result(chain, block, single, stamp)
            return
        prompt = blocks_text(content).strip()
        if subagent is not None or record.get("isMeta") or record.get("isCompactSummary") or not prompt:
            return
        if prompt.startswith(_INTERRUPTED):
            if chain.turns:
                chain.turns[-1].draft.meta["stop_reason"] = "interrupted"
            return
        if prompt.startswith(("<local-command-stdout>", "<local-command-stderr>")):
            return
        command = _COMMAND.search(prompt)
        if command is not None:
            arguments = _COMMAND_ARGS.search(prompt)
            prompt = " ".join(
                p for p in (command.group(1).strip(), arguments and arguments.group(1).strip()) if p
            )
        chain.turns.append(_Turn(TurnDraft(user_message=prompt), [stamp]))
    elif kind == "assistant" and chain.turns:
        turn = chain.turns[-1]
        turn.times.append(stamp)
        message_id = str_or_empty(message.get("id")) or str_or_empty(record.get("uuid"))
        model = str_or_empty(message.get("model"))
        if model and not model.startswith("<") and subagent is None:
            chain.model = model
        stop = str_or_empty(message.get("stop_reason"))
        if stop and subagent is None and turn.draft.meta.get("stop_reason") != "interrupted":
            turn.draft.meta["stop_reason"] = stop
        for block in arr(message.get("content")):
            _assistant_block(chain, turn, obj(block), message_id=message_id, stamp=stamp, subagent=subagent)


def _assistant_block(
    chain: _Chain,
    turn: _Turn,
    block: dict[str, Any],
    *,
    message_id: str,
    stamp: float | None,
    subagent: str | None,
) -> None:
    kind = block.get("type")
    if kind == "text" and subagent is None:
        key = (message_id, "text:" + str_or_empty(block.get("text")))
        if key not in chain.seen and str_or_empty(block.get("text")).strip():
            chain.seen.add(key)
            turn.draft.round_texts.append(str_or_empty(block["text"]).strip())
    elif kind == "tool_use":
        use_id = str_or_empty(block.get("id"))
        if (message_id, use_id) in chain.seen:
            return
        chain.seen.add((message_id, use_id))
        event: dict[str, Any] = {
            "tool": str_or_empty(block.get("name")) or "unknown",
            "input": obj(block.get("input")),
            "ts": stamp,
        }
        if subagent is not None:
            event["subagent"] = subagent
        turn.draft.tool_events.append(event)
        if use_id:
            chain.tools[use_id] = (len(chain.turns) - 1, event)


def _result(chain: _Chain, block: dict[str, Any], detail: Any, stamp: float | None) -> None:
    """Fill the tool event a ``tool_result`` answers (output, ok, exit code, diff)."""
    found = chain.tools.get(str_or_empty(block.get("tool_use_id")))
    if found is None:
        return
    turn_index, event = found
    chain.turns[turn_index].times.append(stamp)
    output = blocks_text(block.get("content"))
    event["output"] = output
    is_error = block.get("is_error")
    event["ok"] = not is_error if isinstance(is_error, bool) else True
    code = _EXIT_CODE.match(output)
    if code is not None:
        event["exit_code"] = int(code.group(1))
    detail = obj(detail)
    diff = _render_patch(detail)
    if diff:
        event["diff"] = diff
    agent_id = str_or_empty(detail.get("agentId"))
    if agent_id:
        chain.agents[agent_id] = str_or_empty(block.get("tool_use_id"))


def _render_patch(detail: dict[str, Any]) -> str:
    """A unified diff from an Edit/Write/MultiEdit ``toolUseResult`` (``structuredPatch`` hunks)."""
    path = str_or_empty(detail.get("filePath"))
    hunks = [obj(h) for h in arr(detail.get("structuredPatch"))]
    if not path:
        return ""
    if not hunks and detail.get("type") == "create" and isinstance(detail.get("content"), str):
        added = detail["content"].splitlines()
        return "\n".join(
            [f"--- /dev/null\n+++ {path}\n@@ -0,0 +1,{len(added)} @@", *("+" + a for a in added)]
        )
    if not hunks:
        return ""
    lines = [f"--- {path}", f"+++ {path}"]
    for hunk in hunks:
        lines.append(
            f"@@ -{hunk.get('oldStart', 0)},{hunk.get('oldLines', 0)} "
            f"+{hunk.get('newStart', 0)},{hunk.get('newLines', 0)} @@"
        )
        lines.extend(line for line in arr(hunk.get("lines")) if isinstance(line, str))
    return "\n".join(lines)


def _attach(chain: _Chain, agent_id: str, records: list[dict[str, Any]]) -> None:
    """Fold a subagent's records into the turn that spawned it, after the spawning tool call."""
    if not chain.turns or not records:
        return
    spawner = chain.tools.get(chain.agents.get(agent_id, ""))
    if spawner is None:
        first_prompt = next(
            (
                blocks_text(obj(r.get("message")).get("content")).strip()
                for r in records
                if r.get("type") == "user"
            ),
            "",
        )
        spawner = next(
            (
                found
                for found in chain.tools.values()
                if found[1]["tool"] in _SPAWNERS
                and str_or_empty(found[1]["input"].get("prompt")).strip() == first_prompt
            ),
            None,
        )
    if spawner is not None:
        turn_index = spawner[0]
    else:
        start = latest(*(parse_time(r.get("timestamp")) for r in records[:1]))
        starts = [min((t for t in turn.times if t is not None), default=None) for turn in chain.turns]
        turn_index = max(
            (i for i, s in enumerate(starts) if s is not None and start is not None and s <= start),
            default=len(chain.turns) - 1,
        )
    side = _Chain(turns=[_Turn(TurnDraft())])
    for record in records:
        _take(side, record, subagent=agent_id)
    parent = chain.turns[turn_index]
    tools = parent.draft.tool_events
    at = next((i + 1 for i, e in enumerate(tools) if spawner is not None and e is spawner[1]), len(tools))
    tools[at:at] = side.turns[0].draft.tool_events
    parent.times.extend(side.turns[0].times)
