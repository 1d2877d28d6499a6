"""``fixmem hook claude-code``: one Claude Code hook payload on stdin, at most one JSON answer on stdout.

The documented hooks interface (docs/decisions/0020-agent-hooks-and-harness-adapter.md cites the
reference used): every payload carries
``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name``; the answer that adds text to the
model's context is ``{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}``. Handled:

- ``UserPromptSubmit`` (``prompt``): the fixes relevant to the prompt;
- ``PostToolUse`` of ``Read|Edit|Write`` (``tool_input.file_path``): fixes that touched that
  file, looked up once per file per session (recall for the session's last prompt and the file, then
  only the entries whose files hold it: a file alone scores below recall's relevance floor);
- ``PostToolUseFailure`` of ``Bash`` (``error``): fixes with that error's signature. A failed command
  comes only this way: ``PostToolUse`` fires after a tool call succeeded, and a ``Bash`` one carries no
  exit status, so it is not listened to (``fixmem.hooks.install.EVENTS``: no process per shell command);
- ``SessionStart``: in local mode, starts the recall daemon when none runs (not waited for), so that
  the session's first prompt finds it warm; prints nothing;
- ``Stop`` / ``SubagentStop``: the finished turns are published from ``transcript_path`` by a detached
  ``python -m fixmem.hooks.publisher`` (the agent does not wait); prints nothing.

Never in the agent's way: any failure (fixmem or Redis down, malformed input, an unreadable store) is
logged to ``<data_dir>/hooks/hook.log``, counted in ``counters.json``, and the hook prints nothing and
exits 0. A fix is injected at most once per session, within the session's token budget. Recall goes
through the API (remote) or the data directory's warm recall daemon (local; a cold start is counted as
``cold``: the prompt hook waits for the daemon, the tool hooks answer nothing). This module is on the
hook's fast path: the standard library's light modules only (``fixmem.hooks.config``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Mapping

from fixmem.hooks.arms import current_session_path, note_follows, note_shown, shown_block, shown_of, with_arm
from fixmem.hooks.config import HookConfig
from fixmem.hooks.reader import Candidate, ColdStart, Query, Reader, ReaderError
from fixmem.hooks.readers import reader_for
from fixmem.hooks.session import SessionState, SessionStore, choose, note_call, note_failure, write_atomic
from fixmem.identity import hook_spool_dir, resolve_project

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FILE_TOOLS = frozenset({"Read", "Edit", "Write"})  # MultiEdit is no longer a Claude Code tool
EDIT_TOOLS = frozenset({"Edit", "Write"})  # a change of the file: a follow of the fixes shown for it
SURFACE = "claude-code"  # the surface named in a session's impact record
ERROR_TOOLS = frozenset({"Bash"})  # PostToolUseFailure: a failed command's error
STOP_EVENTS = frozenset({"Stop", "SubagentStop"})
MAX_PAYLOAD_BYTES = 8 << 20
ERROR_TAIL_CHARS = 2000  # the end of a failing command's output: where the error is
PROMPT_KEPT_CHARS = 1000  # of the last prompt, kept in the session state for the file hook
_PATHLIKE = re.compile(r"[\w./-]*\w\.[A-Za-z0-9]{1,8}\b")
MAX_MENTIONED_FILES = 10
NO_SESSION = "no-session"


class MalformedPayload(ValueError):
    """Raised when stdin is not a hook payload (not JSON, not an object, a field of the wrong type)."""


class Lookup:
    """Recall ``query`` and inject the new fixes; ``file`` is remembered as seen when given (``edit``: the
    agent changed it, which follows the fixes of that file shown before)."""

    __slots__ = ("edit", "event", "file", "query")

    def __init__(self, event: str, query: Query, file: str | None = None, *, edit: bool = False) -> None:
        self.event, self.query, self.file, self.edit = event, query, file, edit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lookup) and (self.event, self.query, self.file, self.edit) == (
            other.event,
            other.query,
            other.file,
            other.edit,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Lookup({self.event!r}, {self.query!r}, file={self.file!r}, edit={self.edit!r})"


class Publish:
    """Publish the finished turns of ``transcript_path`` (``final``: the last turn is finished too)."""

    __slots__ = ("final", "transcript_path")

    def __init__(self, transcript_path: str, final: bool) -> None:
        self.transcript_path, self.final = transcript_path, final

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Publish) and (self.transcript_path, self.final) == (
            other.transcript_path,
            other.final,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Publish({self.transcript_path!r}, final={self.final!r})"


def _str(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedPayload(f"{key} must be a string, not {type(value).__name__}")
    return value


def relative(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when it lies inside it, else as given."""
    if cwd and os.path.isabs(path):
        rel = os.path.relpath(path, cwd)
        if not rel.startswith(".."):
            return rel
    return path


class Warm:
    """Start the local recall daemon if none runs (``SessionStart``)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Warm)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Warm()"


def plan(payload: Mapping[str, Any]) -> Lookup | Publish | Warm | None:
    """What to do for one payload. Pure; raises MalformedPayload."""
    event = _str(payload, "hook_event_name")
    cwd = _str(payload, "cwd")
    if event == "SessionStart":
        return Warm()
    if event == "UserPromptSubmit":
        prompt = _str(payload, "prompt").strip()
        return Lookup(event, Query(prompt)) if prompt else None
    if event in STOP_EVENTS:
        transcript = _str(payload, "transcript_path")
        return Publish(transcript, final=event == "Stop") if transcript else None
    tool = _str(payload, "tool_name")
    tool_input = payload.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, Mapping) else {}
    if event == "PostToolUse" and tool in FILE_TOOLS:
        path = tool_input.get("file_path")
        if not isinstance(path, str) or not path.strip():
            return None
        rel = relative(path, cwd)
        return Lookup(event, Query(rel, files=(rel,)), file=rel, edit=tool in EDIT_TOOLS)
    if event == "PostToolUseFailure" and tool in ERROR_TOOLS:
        error = _str(payload, "error") or _str(payload, "error_message")
        if payload.get("is_interrupt") is True:
            return None  # the user stopped it: not an error to look up
        if not error.strip():
            return None
        error = error.strip()[-ERROR_TAIL_CHARS:]
        return Lookup(event, Query(error, error=error))
    return None


def answer(event: str, block: str) -> dict[str, Any]:
    """The hook's JSON answer adding ``block`` to the model's context."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}


def mentioned_files(text: str, workspace: str) -> tuple[str, ...]:
    """Paths named in ``text`` that are files of ``workspace`` (relative to it), at most ten."""
    found: list[str] = []
    for token in dict.fromkeys(_PATHLIKE.findall(text)):
        rel = relative(token, workspace) if os.path.isabs(token) else token.removeprefix("./")
        if workspace and os.path.isfile(os.path.join(workspace, rel)):
            found.append(rel)
            if len(found) >= MAX_MENTIONED_FILES:
                break
    return tuple(found)


def touched(candidate: Candidate, path: str) -> bool:
    """Whether the candidate's entry touched ``path`` (compared as normalized relative paths)."""
    wanted = os.path.normpath(path)
    return any(os.path.normpath(f) == wanted for f in candidate.files)


def project_of(config: HookConfig, cwd: str) -> str:
    """``FIXMEM_PROJECT`` when set, else the key of ``cwd`` (the key the importer gives the session): the
    one rule, ``fixmem.identity.resolve_project``."""
    return resolve_project(config.project, workspace=cwd or None, env={})


def spawn_publisher(config: HookConfig, payload: Mapping[str, Any], action: Publish) -> None:
    """Start ``python -m fixmem.hooks.publisher`` detached (its own session, no stdio), not waited for."""
    argv = [
        sys.executable,
        "-m",
        "fixmem.hooks.publisher",
        "--transcript",
        action.transcript_path,
        "--session",
        _str(payload, "session_id"),
        "--cwd",
        _str(payload, "cwd"),
    ]
    if action.final:
        argv.append("--final")
    detached(argv)


def detached(argv: list[str]) -> None:
    """Start ``argv`` in its own session with no stdio; not waited for."""
    import subprocess  # noqa: PLC0415

    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def action_delivers(action: Lookup | Warm) -> bool:
    """Whether this hook call sends spooled turns: a session's start and each prompt, not a tool call
    (a frequent event would start a process per call while Redis stays down)."""
    return isinstance(action, Warm) or action.event == "UserPromptSubmit"


def handle(
    payload: Mapping[str, Any],
    config: HookConfig,
    *,
    reader: Reader | None = None,
    spawn: Callable[[HookConfig, Mapping[str, Any], Publish], None] = spawn_publisher,
    trace: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The answer to one payload (None: print nothing); ``trace`` gets what was done (``lookup``).
    Raises MalformedPayload, ReaderError, OSError."""
    trace = {} if trace is None else trace
    if not config.enabled:
        trace["result"] = "disabled (FIXMEM_FIX_MEMORY_ENABLED / _AUTO_RECALL)"
        return None
    action = plan(payload)
    if action is None:
        trace["result"] = "nothing to do for this event"
        return None
    if isinstance(action, Publish):
        spawn(config, payload, action)  # the publisher sends the spooled turns first
        trace["result"] = "publishing the finished turns"
        return None
    if config.redis_url and action_delivers(action) and spooled(config):
        spawn_drain(config)  # a Stop with Redis down kept its turns: Redis may answer now
    cwd = _str(payload, "cwd")
    if isinstance(action, Warm):
        checkout = cwd if config.localize and cwd else None  # its index loaded or built meanwhile
        if config.daemon_idle_seconds > 0 and config.owner and (checkout or not config.remote):
            from fixmem.hooks.daemon_client import warm_daemon  # noqa: PLC0415

            warm_daemon(config, None if config.remote else (config.owner, project_of(config, cwd)), checkout)
        trace["result"] = "session start" + ("" if config.remote else ": the recall daemon is warming up")
        return None
    if action.event == "UserPromptSubmit":  # files the prompt names weigh in, and where it localizes in cwd
        prompt = action.query.q
        action = Lookup(action.event, Query(prompt, mentioned_files(prompt, cwd), checkout=cwd or None))
    session_id = _str(payload, "session_id") or NO_SESSION
    if config.project:
        project = config.project
    else:  # the key of the cwd, computed once per session (a walk up to .git and a read of its config)
        state = SessionStore(sessions_dir(config)).read(session_id)
        project = state.project if state.project and state.cwd == cwd else project_of(config, cwd)
    if reader is None:
        reader = reader_for(config, wait_cold=action.event == "UserPromptSubmit")
    block = lookup(config, reader, session_id, project, action, cwd=cwd, trace=trace)
    return answer(action.event, block) if block else None


def sessions_dir(config: HookConfig) -> str:
    return os.path.join(config.hooks_dir, "sessions")


def spool_dir(config: HookConfig) -> str:
    """Where the Stop publisher keeps the turns Redis did not take (``ingest.spool``)."""
    return hook_spool_dir(config.data_dir)


def spooled(config: HookConfig) -> bool:
    """Whether turns wait in the spool (one ``listdir``: the fast path stays light)."""
    try:
        names = os.listdir(spool_dir(config))
    except OSError:
        return False
    return any(n.endswith(".jsonl") and not n.startswith(".") for n in names)


def spawn_drain(config: HookConfig) -> None:
    """Start ``python -m fixmem.hooks.publisher --drain`` detached, not waited for."""
    detached([sys.executable, "-m", "fixmem.hooks.publisher", "--drain"])


def lookup(
    config: HookConfig,
    reader: Reader,
    session_id: str,
    project: str,
    action: Lookup,
    *,
    cwd: str | None = None,
    trace: dict[str, Any] | None = None,
    surface: str = SURFACE,
) -> str:
    """The block of fixes for ``action`` not injected yet in the session ("" for none, and always in a
    ``holdback`` session); records them (the session's arm, fixes shown and followed: ``fixmem.hooks.arms``;
    given ``cwd``, the session's cwd and project key). ``trace`` gets what happened (the project,
    candidates found, ids injected) for the call log. Raises ReaderError, OSError."""
    trace = {} if trace is None else trace
    trace["project"] = project
    sessions = SessionStore(sessions_dir(config))
    session_id = session_id or NO_SESSION
    query = action.query
    edited = action.file if action.edit else None
    if action.file is not None:
        before = sessions.read(session_id)
        if action.file in before.files:  # looked up already in this session: an edit may follow its fixes
            if edited is not None and before.shown:
                with sessions.update(session_id) as box:
                    box[0] = note_follows(box[0], edited=edited)
            trace["result"] = "file seen before in this session"
            return ""
        query = query.replace(q=f"{before.prompt} {action.file}".strip())
    candidates: list[Candidate] = reader.candidates(project, query)
    same_error = [c.entry_id for c in candidates if c.same_error] if query.error else []
    if action.file is not None:
        candidates = [c for c in candidates if touched(c, action.file)]
    trace["candidates"] = len(candidates)
    with sessions.update(session_id) as box:
        state = _contact(box[0], config, session_id, project, action, cwd=cwd)
        first = not box[0].arm
        state = note_follows(state, edited=edited, same_error=same_error)  # before this call's own fixes
        if action.file is not None:
            if action.file in state.files:
                box[0] = state
                trace["result"] = "file seen before in this session"
                return ""
            state = state.replace(files=(*state.files, action.file))
        chosen = choose(
            [(c.entry_id, c.line) for c in candidates],
            state,
            prompt_budget=config.prompt_budget_tokens,
            session_budget=config.session_budget_tokens,
        )
        if chosen.block:
            state = note_shown(chosen.state, shown_of(candidates, chosen.entry_ids), surface)
        box[0] = state
    if first and surface == SURFACE:  # the MCP server of this agent learns its session here
        write_atomic(current_session_path(sessions.directory, config.owner, project), session_id.encode())
    return shown_block(state, chosen.block, chosen.entry_ids, trace, found=bool(candidates))


def _contact(
    state: SessionState, config: HookConfig, session_id: str, project: str, action: Lookup, *, cwd: str | None
) -> SessionState:
    """``state`` at this call: its cwd and project, the last prompt, and its arm at first contact."""
    if cwd is not None and (state.cwd, state.project) != (cwd, project):
        state = state.replace(cwd=cwd, project=project)
    if action.event == "UserPromptSubmit":
        state = state.replace(prompt=action.query.q[:PROMPT_KEPT_CHARS])
    return with_arm(
        state, config.owner, project, session_id, share=config.holdback, salt=config.holdback_salt
    )


def run(raw: bytes, env: Mapping[str, str] | None = None, *, reader: Reader | None = None) -> str:
    """The text to print for stdin ``raw`` ("" for nothing). Never raises: failures are logged, counted."""
    try:
        config = HookConfig.from_env(env)
    except Exception:
        return ""
    started = time.monotonic()
    trace: dict[str, Any] = {}
    out = _answer(raw, config, reader, trace)
    trace["ms"] = round((time.monotonic() - started) * 1000, 1)
    note_call(config.hooks_dir, {"ts": round(time.time(), 3), **trace})
    return out


def _answer(raw: bytes, config: HookConfig, reader: Reader | None, trace: dict[str, Any]) -> str:
    try:
        if len(raw) > MAX_PAYLOAD_BYTES:
            raise MalformedPayload(f"payload of {len(raw)} bytes")
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise MalformedPayload(f"not JSON: {exc}") from exc
        if not isinstance(payload, dict):
            raise MalformedPayload("not a JSON object")
        trace["event"] = str(payload.get("hook_event_name") or "")[:64]
        result = handle(payload, config, reader=reader, trace=trace)
    except (MalformedPayload, ColdStart, ReaderError, Exception) as exc:
        kind = next((k for t, k in _FAILURE_KINDS.items() if isinstance(exc, t)), "error")
        message = str(exc) if kind != "error" else f"{type(exc).__name__}: {exc}"
        note_failure(config.hooks_dir, kind, message)
        trace["result"] = f"{kind}: {message}"[:300]
        return ""
    return json.dumps(result, ensure_ascii=False) if result else ""


_FAILURE_KINDS: dict[type[BaseException], str] = {
    MalformedPayload: "malformed",
    ColdStart: "cold",
    ReaderError: "unavailable",
}


def main(argv: list[str] | None = None) -> int:
    """Read the payload from stdin, print the answer; always 0."""
    try:
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    except (OSError, ValueError):
        raw = b""
    out = run(raw)
    if out:
        try:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    return 0
