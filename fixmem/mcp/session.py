"""The ``recall_fixes`` tool's agent session: its arm (the impact measurement) and what it showed.

Which session a call belongs to, first found first: the ``session_id`` the client passes (an argument of
the tool); else the session the Claude Code hook of the same owner and project last started, when it
started after this connection did (Claude Code starts its MCP servers at the session's start, and its
prompt hook names the session: ``fixmem.hooks.arms.current_session_path``); else the connection itself
(``ToolContext.session_id``, one per MCP server process). The arm is the session's of first contact, kept
in the hooks' session state (``<data_dir>/hooks/sessions/``): a Claude Code session held back is held back
in its tool calls too. The fixes the tool shows (or, held back, would show) join the session's record
with the surface ``mcp``; the hooks see the edits and errors that follow them.
"""

from __future__ import annotations

import os

from fixmem.hooks.arms import arm_for, current_session_path, note_shown
from fixmem.hooks.session import SessionStore
from store import Recalled
from store.recall.search import POSSIBLE

SURFACE = "mcp"
STARTED_SLACK_SECONDS = 60.0  # a hook's session named this long before the connection began still counts


def session_of(
    sessions_dir: str | None, owner: str, project: str, *, given: str | None, connection: str, started: float
) -> str:
    """The session a call belongs to (see the module's docstring)."""
    if given:
        return given
    if sessions_dir:
        path = current_session_path(sessions_dir, owner, project)
        try:
            if os.stat(path).st_mtime >= started - STARTED_SLACK_SECONDS:
                with open(path, encoding="utf-8") as handle:
                    named = handle.read().strip()
                if named:
                    return named
        except OSError:
            pass
    return connection


def record(
    sessions_dir: str | None,
    owner: str,
    project: str,
    session_id: str,
    recalled: list[Recalled],
    *,
    share: float,
    salt: str,
) -> str:
    """The session's arm (assigned now at its first contact), with ``recalled`` noted as shown (injected in
    ``memory``, the shadow in ``holdback``) when there is a session directory. Raises OSError."""
    if not sessions_dir:
        return arm_for(owner, project, session_id, share=share, salt=salt)
    with SessionStore(sessions_dir).update(session_id) as box:
        state = box[0]
        if not state.arm:
            state = state.replace(arm=arm_for(owner, project, session_id, share=share, salt=salt))
        if not state.project:
            state = state.replace(project=project)
        shown = [
            (r.entry.id, "possible" if r.tier == POSSIBLE else "close", tuple(r.entry.files))
            for r in recalled
        ]
        box[0] = note_shown(state, shown, SURFACE)
        return box[0].arm
