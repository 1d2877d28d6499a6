"""The recall_fixes tool in the impact measurement: a held-back session gets nothing (notes stay on), its
shadow is recorded in the hooks' session state; the session is the client's id, else the Claude Code
session the hook named after this connection began, else the connection."""

from __future__ import annotations

import os
from pathlib import Path

from fixmem.hooks.arms import HOLDBACK, MEMORY, arm_for, current_session_path
from fixmem.hooks.session import SessionStore
from fixmem.mcp.tool import NOTHING_RELEVANT, ToolContext, auto_recall, recall_fixes
from store import FixStore
from tests.configs import fix_store
from tests.store.factories import make_entry

OWNER, PROJECT, SALT = "alice", "github.com/acme/widgets", "t"
QUERY = {"query": "parse_csv drops quoted commas"}


def session_in(arm: str) -> str:
    return next(
        f"s-{n}" for n in range(1000) if arm_for(OWNER, PROJECT, f"s-{n}", share=0.5, salt=SALT) == arm
    )


def setup(tmp_path: Path, **overrides: object) -> tuple[FixStore, ToolContext]:
    store = fix_store(tmp_path / "data")
    store.append(
        OWNER,
        PROJECT,
        [make_entry(1, "parse_csv drops quoted commas", files=["src/csv_io.py"], project=PROJECT)],
    )
    sessions = str(tmp_path / "data" / "hooks" / "sessions")
    values = {"holdback": 0.5, "holdback_salt": SALT, "sessions_dir": sessions, **overrides}
    return store, ToolContext(store=store, owner=OWNER, project_key=PROJECT, **values)  # type: ignore[arg-type]


def test_a_holdback_session_gets_nothing_and_its_shadow_is_recorded(tmp_path: Path) -> None:
    _, ctx = setup(tmp_path)
    held, shown = session_in(HOLDBACK), session_in(MEMORY)
    assert recall_fixes(ctx, {**QUERY, "session_id": held}).fixes == []
    assert recall_fixes(ctx, {**QUERY, "session_id": held}).text == NOTHING_RELEVANT
    assert recall_fixes(ctx, {**QUERY, "session_id": shown}).fixes
    states = SessionStore(str(ctx.sessions_dir))
    assert (states.read(held).arm, [s[1] for s in states.read(held).shown]) == (HOLDBACK, ["mcp"])
    assert states.read(shown).arm == MEMORY and states.read(shown).shown


def test_the_hooks_session_is_the_tools_when_it_began_after_the_connection(tmp_path: Path) -> None:
    held = session_in(HOLDBACK)
    _, ctx = setup(tmp_path)
    assert ctx.sessions_dir is not None
    os.makedirs(ctx.sessions_dir, exist_ok=True)
    pointer = current_session_path(ctx.sessions_dir, OWNER, PROJECT)
    Path(pointer).write_text(held)
    assert recall_fixes(ctx, QUERY).fixes == []  # the Claude Code session is held back
    old = ctx.started - 3600
    os.utime(pointer, (old, old))  # a session of an earlier connection: this connection is the session
    memory_connection = next(
        f"c-{n}" for n in range(1000) if arm_for(OWNER, PROJECT, f"c-{n}", share=0.5, salt=SALT) == MEMORY
    )
    _, fresh = setup(tmp_path / "other", session_id=memory_connection)
    Path(fresh.sessions_dir or "").mkdir(parents=True, exist_ok=True)
    Path(current_session_path(fresh.sessions_dir or "", OWNER, PROJECT)).write_text(held)
    os.utime(current_session_path(fresh.sessions_dir or "", OWNER, PROJECT), (old, old))
    assert recall_fixes(fresh, QUERY).fixes


def test_notes_stay_on_in_a_holdback_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".fixmem").mkdir(parents=True)
    (workspace / ".fixmem" / "memory.md").write_text(
        "## gotcha: the csv fixtures are generated\nRun make fixtures after editing csv_io.\n"
    )
    held_connection = next(
        f"c-{n}" for n in range(1000) if arm_for(OWNER, PROJECT, f"c-{n}", share=0.5, salt=SALT) == HOLDBACK
    )
    _, ctx = setup(tmp_path, session_id=held_connection, workspace=str(workspace))
    block = auto_recall(ctx, "parse_csv drops quoted commas")
    assert "the csv fixtures are generated" in block  # the note
    assert "Past fixes in this project" not in block  # no fix
    memory_connection = next(
        f"c-{n}" for n in range(1000) if arm_for(OWNER, PROJECT, f"c-{n}", share=0.5, salt=SALT) == MEMORY
    )
    _, other = setup(tmp_path / "m", session_id=memory_connection, workspace=str(workspace))
    assert "Past fixes in this project" in auto_recall(other, "parse_csv drops quoted commas")
