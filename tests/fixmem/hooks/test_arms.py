"""The impact measurement in the hooks: a session's arm, holdback (no fix context, the shadow recorded),
follows (an edit of the fix's file or its error after it was shown; never the Read that showed it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixmem.hooks import arms, claude_code
from fixmem.hooks.arms import HOLDBACK, MEMORY, arm_for, note_follows, note_shown, recall_record
from fixmem.hooks.session import SessionState, SessionStore
from store.recall import prompt
from tests.fixmem.hooks.conftest import OWNER, PROJECT

SALT = "t"


def session_in(arm: str, share: float = 0.5) -> str:
    """A session id the assignment puts in ``arm`` (found by trying ids in order)."""
    return next(
        f"s-{n}" for n in range(1000) if arm_for(OWNER, PROJECT, f"s-{n}", share=share, salt=SALT) == arm
    )


def test_the_assignment_is_deterministic_and_near_the_share() -> None:
    ids = [f"session-{n}" for n in range(20_000)]
    held = [arm_for(OWNER, PROJECT, i, share=0.1, salt=SALT) for i in ids].count(HOLDBACK)
    assert 0.09 < held / len(ids) < 0.11
    assert [arm_for(OWNER, PROJECT, i, share=0.1, salt=SALT) for i in ids[:50]] == [
        arm_for(OWNER, PROJECT, i, share=0.1, salt=SALT) for i in ids[:50]
    ]
    assert {arm_for(OWNER, PROJECT, i, share=0.0, salt=SALT) for i in ids[:500]} == {MEMORY}  # off
    other_salt = [arm_for(OWNER, PROJECT, i, share=0.5, salt="u") for i in ids[:200]]
    assert other_salt != [arm_for(OWNER, PROJECT, i, share=0.5, salt=SALT) for i in ids[:200]]


def test_the_tier_heading_mirrors_the_store() -> None:
    assert arms.POSSIBLE_HEADER == prompt.POSSIBLE_HEADER


def shown_state() -> SessionState:
    state = SessionState(arm=MEMORY)
    return note_shown(state, [("fix-a", "close", ("src/a.py",)), ("fix-b", "possible", ("src/b.py",))], "t")


@pytest.mark.parametrize(
    ("edited", "same_error", "followed"),
    [
        ("src/a.py", (), ("fix-a",)),  # an edit of the fix's file
        ("./src/b.py", (), ("fix-b",)),  # compared as normalized paths
        ("src/c.py", (), ()),  # another file
        (None, ("fix-b",), ("fix-b",)),  # its error signature met
        (None, ("fix-z",), ()),  # a fix never shown is never followed
    ],
)
def test_follows(edited: str | None, same_error: tuple[str, ...], followed: tuple[str, ...]) -> None:
    assert note_follows(shown_state(), edited=edited, same_error=same_error).followed == followed


def test_the_record_names_the_arm_and_where_each_fix_was_shown() -> None:
    state = note_follows(shown_state(), edited="src/a.py")
    assert recall_record(state) == {
        "arm": MEMORY,
        "injected": [
            {"id": "fix-a", "surface": "t", "tier": "close"},
            {"id": "fix-b", "surface": "t", "tier": "possible"},
        ],
        "shadow": [],
        "followed": ["fix-a"],
    }
    held = recall_record(state.replace(arm=HOLDBACK))
    assert held is not None and held["injected"] == [] and len(held["shadow"]) == 2
    assert recall_record(SessionState()) is None  # before first contact


def payload(event: str, session: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": "",
        "cwd": "/home/alice/widgets",
        "hook_event_name": event,
        **fields,
    }


def env_for(data_dir: Path, share: str = "0.5") -> dict[str, str]:
    return {
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_PROJECT": PROJECT,
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "0",
        "FIXMEM_HOLDBACK": share,
        "FIXMEM_HOLDBACK_SALT": SALT,
    }


def drive(data_dir: Path, session: str, env: dict[str, str]) -> list[str]:
    """A session: prompt, Read of the fix's file, its error, an Edit of the file; what the hooks printed."""
    totals = "/home/alice/widgets/invoicer/totals.py"
    calls = [
        payload("UserPromptSubmit", session, prompt="apply_discount raises ZeroDivisionError"),
        payload("PostToolUse", session, tool_name="Read", tool_input={"file_path": totals}),
        payload("PostToolUseFailure", session, tool_name="Bash", error="ZeroDivisionError: division by zero"),
        payload("PostToolUse", session, tool_name="Edit", tool_input={"file_path": totals}),
    ]
    return [claude_code.run(json.dumps(c).encode(), env) for c in calls]


def test_a_holdback_session_gets_no_fix_and_records_the_shadow_and_follows(seeded: Path) -> None:
    env = env_for(seeded)
    held, shown = session_in(HOLDBACK), session_in(MEMORY)
    assert drive(seeded, held, env) == ["", "", "", ""]
    memory_out = drive(seeded, shown, env)
    assert "apply_discount" in json.loads(memory_out[0])["hookSpecificOutput"]["additionalContext"]
    sessions = SessionStore(claude_code.sessions_dir(claude_code.HookConfig.from_env(env)))
    for session, arm in ((held, HOLDBACK), (shown, MEMORY)):
        state = sessions.read(session)
        record = recall_record(state)
        assert record is not None and record["arm"] == arm
        listed = record["shadow" if arm == HOLDBACK else "injected"]
        (fix,) = [s["id"] for s in listed if s["surface"] == "claude-code"][:1]
        assert fix in record["followed"]  # its error, then an edit of its file, after it was shown
        assert record["injected" if arm == HOLDBACK else "shadow"] == []


def test_the_read_that_showed_a_fix_does_not_follow_it(seeded: Path) -> None:
    env = env_for(seeded, share="0")
    session = "reader"
    read = payload(
        "PostToolUse",
        session,
        tool_name="Read",
        tool_input={"file_path": "/home/alice/widgets/invoicer/totals.py"},
    )
    assert claude_code.run(json.dumps(read).encode(), env)  # the file hook shows the fix
    state = SessionStore(claude_code.sessions_dir(claude_code.HookConfig.from_env(env))).read(session)
    assert state.shown and state.followed == ()
    edit = {**read, "tool_name": "Edit"}
    assert claude_code.run(json.dumps(edit).encode(), env) == ""  # seen before: nothing new, but a follow
    state = SessionStore(claude_code.sessions_dir(claude_code.HookConfig.from_env(env))).read(session)
    assert state.followed == (state.shown[0][0],)


def test_reading_a_shown_fix_file_is_not_a_follow_its_error_is(seeded: Path) -> None:
    env = env_for(seeded, share="0")
    session = "prompted"
    prompt_call = payload("UserPromptSubmit", session, prompt="apply_discount raises ZeroDivisionError")
    assert claude_code.run(json.dumps(prompt_call).encode(), env)
    totals = "/home/alice/widgets/invoicer/totals.py"
    read = payload("PostToolUse", session, tool_name="Read", tool_input={"file_path": totals})
    claude_code.run(json.dumps(read).encode(), env)
    sessions = SessionStore(claude_code.sessions_dir(claude_code.HookConfig.from_env(env)))
    assert sessions.read(session).followed == ()  # a Read after the injection: looked at, not followed
    failure = payload(
        "PostToolUseFailure", session, tool_name="Bash", error="ZeroDivisionError: division by zero"
    )
    claude_code.run(json.dumps(failure).encode(), env)
    state = sessions.read(session)
    assert state.followed == (state.shown[0][0],)  # its error signature met


def test_the_arm_of_first_contact_holds_for_the_session(seeded: Path) -> None:
    held = session_in(HOLDBACK)
    drive(seeded, held, env_for(seeded))
    later = env_for(seeded, share="0")  # the share changed mid-session: the session keeps its arm
    out = claude_code.run(
        json.dumps(payload("UserPromptSubmit", held, prompt="parse_csv drops quoted commas")).encode(), later
    )
    assert out == ""
    fresh = claude_code.run(
        json.dumps(payload("UserPromptSubmit", "new-one", prompt="parse_csv drops quoted commas")).encode(),
        later,
    )
    assert fresh and "parse_csv" in fresh
