"""Aider chat history markdown (``.aider.chat.history.md``) → one turn event per ``####`` request.

``# aider chat started at <time>`` opens a session; consecutive ``#### `` lines are one user message;
``> `` lines are aider's own output (``> Applied edit to <path>``, ``> Commit <sha> <msg>``, the output of
``/run`` and ``/test``); everything else is the assistant's reply. Tool events, in order of appearance:
- ``edit`` ``{path, old_str, new_str}`` for each SEARCH/REPLACE block (``<<<<<<< SEARCH``/``ORIGINAL`` …
  ``>>>>>>> REPLACE``/``UPDATED`` under a file-name line); ``ok`` true when an ``Applied edit to <path>``
  line follows in the turn, false when aider reports it failed to apply (``Failed to apply edit to`` /
  ``SearchReplaceNoExactMatch`` naming the path), else unset; an applied path with no block gets ``{path}``.
- ``run`` ``{command, slash}`` for ``/run`` and ``/test`` requests, with the quoted output that follows.
- other slash commands (``/add``, ``/drop``, ``/undo``, ``/git`` …) as tool ``/name`` ``{command: args}``.
``harness_meta.commit`` is the last ``Commit <sha>`` of the turn. A later ``/run``/``/test`` request that
edits nothing judges the last editing request (``harness_meta.verdict``, ``judge_by_later_runs``).
Times: the session start plus the turn's index in seconds (no per-message time is written); without a
start line, the undated epoch.
Lacks: exit codes (pass/fail must be read from the test output), per-turn times, a working directory
(the project is the ``project`` argument, else the directory the shell names).
"""

from __future__ import annotations

import re
from typing import Any

from ingest.importers._common import Origin, TurnDraft, build_events, parse_time
from ingest.importers.verdicts import summary_line, summary_passed
from ingest.schema import TurnEvent

FORMAT = "aider"
_STARTED = re.compile(r"^# aider chat started at (.+?)\s*$")
_USER = "#### "
_SEARCH = re.compile(r"^<{5,9} (?:SEARCH|ORIGINAL)\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9} (?:REPLACE|UPDATED)\s*$")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_FAILED = re.compile(
    r"(?:Failed to apply edit to|SearchReplaceNoExactMatch:.*? in|did not match.*? in) (\S+)"
)
_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40})\b")
_RUNS = {"/run": "run", "/test": "run"}
_PROMPT_PREFIXES = ("/ask ", "/code ", "/architect ")
_ANSWER = re.compile(
    r"^(?:Add (?:the )?output to the chat\?|Run shell command\?|Add command output"
    r"|Added \d+ lines? of output).*$"
)
_DIV = re.compile(r"^\s*</?div\b[^>]*>\s*$")


def parse(
    data: bytes, *, source: str, owner: str, project: str | None = None, workspace: str = ""
) -> list[TurnEvent]:
    """One event per ``####`` request of the transcript; a file with no request yields no events.

    ``workspace``: the repository the history belongs to (the shell passes the file's directory).
    """
    lines = data.decode("utf-8", "replace").splitlines()
    session_start: float | None = None
    turns: list[_Turn] = []
    in_session = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        started = _STARTED.match(line)
        if started:
            session_start, in_session = parse_time(started.group(1)), 0
        if _is_request(line):
            request = []
            while i < len(lines) and _is_request(lines[i]):
                request.append(lines[i][5:].rstrip())
                i += 1
            ts = session_start + in_session if session_start is not None else None
            turns.append(_Turn("\n".join(request).strip(), ts))
            in_session += 1
            continue
        if turns:
            turns[-1].body.append(line)
        i += 1
    origin = Origin(
        format=FORMAT,
        identity="",  # aider writes no session id: the turn's content is its identity
        owner=owner,
        project_key=project or workspace or source,  # the shell keys the workspace (project_key_for)
        workspace=workspace,
        meta={"harness": FORMAT},
    )
    drafts = [turn.draft() for turn in turns]
    judge_by_later_runs(drafts)
    return build_events(origin, drafts) if drafts else []


def judge_by_later_runs(drafts: list[TurnDraft]) -> None:
    """Give the last editing request the verdict of a later ``/run``/``/test`` request that edits nothing.

    Such a request is the user running the tests after the agent's change (a turn with no file of its own,
    which extraction skips): its result is a ``ci`` verdict on the change, when the output's summary says
    passed or failed (``importers.verdicts.summary_passed``). The last such run before the next edit wins.
    """
    last_edit: int | None = None
    for i, draft in enumerate(drafts):
        if any(t["tool"] == "edit" for t in draft.tool_events):
            last_edit = i
            continue
        runs = [t for t in draft.tool_events if t["tool"] == "run"]
        passed = summary_passed(runs[-1]["output"]) if runs else None
        if last_edit is None or passed is None:
            continue
        command = f"{runs[-1]['input'].get('slash', '/run')} {runs[-1]['input'].get('command', '')}".strip()
        verdict: dict[str, Any] = {
            "source": "ci",
            "outcome": "fixed" if passed else "partial",
            "detail": f"later {command}: {summary_line(runs[-1]['output'])}"[:500],
        }
        if draft.ts is not None:
            verdict["ts"] = draft.ts
        drafts[last_edit].meta["verdict"] = verdict


def _is_request(line: str) -> bool:
    return line.startswith(_USER) or line.rstrip() == "####"


class _Turn:
    """The lines of one request: the user message and the body that follows it."""

    def __init__(self, request: str, ts: float | None) -> None:
        self.request = request
        self.ts = ts
        self.body: list[str] = []

    def draft(self) -> TurnDraft:
        draft = TurnDraft(user_message=self.request, ts=self.ts)
        slash, _, rest = self.request.partition(" ")
        run: dict[str, Any] | None = None
        if slash.startswith("/") and "\n" not in slash:
            if slash in _RUNS:
                run = {"tool": _RUNS[slash], "input": {"command": rest.strip(), "slash": slash}, "output": ""}
                draft.tool_events.append(run)
            elif self.request.startswith(_PROMPT_PREFIXES):
                draft.user_message = rest.strip()
            else:
                draft.tool_events.append({"tool": slash, "input": {"command": rest.strip()}, "output": ""})
        quoted: list[str] = []
        reply: list[str] = []
        blocks: list[dict[str, Any]] = []
        lines = self.body
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith(">"):
                quoted.append((line[2:] if line.startswith("> ") else line[1:]).rstrip())
                i += 1
                continue
            if run is not None and quoted and not run["output"] and not any(r.strip() for r in reply):
                run["output"] = _tool_output(quoted)
            if _SEARCH.match(line):
                end, back, block = _search_replace(lines, i)
                if block is not None:
                    del reply[max(0, len(reply) - back) :]  # the file-name and fence lines above the block
                    blocks.append(block)
                    draft.tool_events.append(block)
                    i = end + 1 if end < len(lines) and lines[end].strip() == "```" else end
                    continue
            if not _DIV.match(line):
                reply.append(line)
            i += 1
        if run is not None and not run["output"] and quoted:
            run["output"] = _tool_output(quoted)
        _outcomes(draft, blocks, quoted)
        prose = "\n".join(reply).strip()
        if prose:
            draft.round_texts.append(prose)
        return draft


def _search_replace(lines: list[str], at: int) -> tuple[int, int, dict[str, Any] | None]:
    """The SEARCH/REPLACE block opening at ``lines[at]``: (index after it, lines above it that name the
    file, tool event), or (at, 0, None) when the block never closes."""
    path = ""
    back = 0
    k = 2 if at >= 1 and _fence(lines[at - 1]) else 1  # the new format fences the block, not the name
    if at - k >= 0 and lines[at - k].strip() and not _fence(lines[at - k]):
        path, back = lines[at - k].strip().strip("`*:").strip(), k
        if at - k - 1 >= 0 and _fence(lines[at - k - 1]):  # the old format fences the name too
            back = k + 1
    old: list[str] = []
    new: list[str] = []
    target = old
    for j in range(at + 1, len(lines)):
        if _DIVIDER.match(lines[j]) and target is old:
            target = new
        elif _REPLACE.match(lines[j]):
            event = {
                "tool": "edit",
                "input": {"path": path, "old_str": "\n".join(old), "new_str": "\n".join(new)},
            }
            return j + 1, back, event
        else:
            target.append(lines[j])
    return at, 0, None


def _fence(line: str) -> bool:
    return line.strip().startswith("```")


def _outcomes(draft: TurnDraft, blocks: list[dict[str, Any]], quoted: list[str]) -> None:
    """Mark edit blocks applied or failed from aider's messages; add applied edits that had no block."""
    applied: list[str] = []
    failed: set[str] = set()
    for said in quoted:
        line = said.strip()
        match = _APPLIED.match(line)
        if match:
            applied.append(match.group(1))
        failure = _FAILED.search(line)
        if failure:
            failed.add(failure.group(1).strip("`'\""))
        commit = _COMMIT.match(line)
        if commit:
            draft.meta["commit"] = draft.meta["commit_end"] = commit.group(1)  # aider commits each edit
    for block in blocks:
        path = block["input"]["path"]
        if path in failed:
            block["ok"] = False
        elif path in applied:
            block["ok"] = True
    named = {b["input"]["path"] for b in blocks}
    for path in dict.fromkeys(applied):
        if path not in named:
            draft.tool_events.append({"tool": "edit", "input": {"path": path}, "ok": True})


def _tool_output(quoted: list[str]) -> str:
    """A command's output from the quoted lines: fences and aider's follow-up questions dropped."""
    kept = [q for q in quoted if not _ANSWER.match(q.strip()) and q.strip() != "```"]
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)
