"""The impact measurement end to end with Claude Code hook payloads: real hook processes (the installed
command), the recall daemon, the detached Stop publisher writing the local store, then ``fixmem impact``.
A holdback session gets no fix context on any hook, a memory session does; the arm holds for the
session; its follows and shadow reach the store; ``fixmem impact`` reports both arms."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fixmem.cli import main
from fixmem.hooks.arms import HOLDBACK, MEMORY, arm_for
from tests.configs import fix_store
from tests.fixmem.hooks.conftest import OWNER, PROJECT
from tests.fixmem.hooks.test_claude_code_e2e import hook, wait_for
from tests.fixmem.hooks.transcripts import Transcript, hook_payload

SALT = "e2e"
WORKSPACE = "/home/alice/widgets"
TOTALS = f"{WORKSPACE}/invoicer/totals.py"


def session_in(arm: str) -> str:
    ids = (f"{n:08d}-aaaa-bbbb" for n in range(1000))
    return next(i for i in ids if arm_for(OWNER, PROJECT, i, share=0.5, salt=SALT) == arm)


def run_session(session_id: str, home: Path, env: dict[str, str]) -> list[str]:
    """One agent session through the hooks; what each hook printed (Stop publishes its turn). The sessions'
    turns differ in their task: imported turns of the same time, task and files are one turn to the store."""
    transcript = (
        Transcript(home / f"{session_id}.jsonl", session_id, WORKSPACE)
        .prompt(f"apply_discount raises ZeroDivisionError when quantity is 0 (session {session_id})")
        .tool(
            "Bash", {"command": "pytest -q"}, "E   ZeroDivisionError: division by zero\n1 failed", error=True
        )
        .tool("Edit", {"file_path": TOTALS, "old_string": "a", "new_string": "b"}, "updated")
        .tool("Bash", {"command": "pytest -q"}, "3 passed in 0.01s")
        .reply("guarded quantity == 0; the tests pass.")
    )
    transcript.write()
    calls = [
        hook_payload("UserPromptSubmit", transcript, prompt="apply_discount raises ZeroDivisionError"),
        hook_payload("PostToolUse", transcript, tool_name="Read", tool_input={"file_path": TOTALS}),
        hook_payload(
            "PostToolUseFailure", transcript, tool_name="Bash", error="ZeroDivisionError: division by zero"
        ),
        hook_payload("PostToolUse", transcript, tool_name="Edit", tool_input={"file_path": TOTALS}),
        hook_payload("UserPromptSubmit", transcript, prompt="parse_csv drops quoted commas too"),
    ]
    printed = []
    for call in calls:
        done = hook({**call, "cwd": WORKSPACE}, env)
        assert done.returncode == 0
        printed.append(done.stdout)
    assert (
        hook({**hook_payload("Stop", transcript, stop_hook_active=False), "cwd": WORKSPACE}, env).stdout == ""
    )
    return printed


def test_holdback_and_memory_sessions_through_the_hooks_and_fixmem_impact(
    seeded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    env = {
        **clean,
        "FIXMEM_DATA_DIR": str(seeded),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_PROJECT": PROJECT,
        "FIXMEM_HOLDBACK": "0.5",
        "FIXMEM_HOLDBACK_SALT": SALT,
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "20",
        "FIXMEM_HOOK_COLD_WAIT_SECONDS": "60",
    }
    held, shown = session_in(HOLDBACK), session_in(MEMORY)
    assert run_session(held, tmp_path, env) == [""] * 5  # no fix context on any hook, the second prompt too
    printed = run_session(shown, tmp_path, env)
    assert "apply_discount" in json.loads(printed[0])["hookSpecificOutput"]["additionalContext"]
    assert "parse_csv" in json.loads(printed[4])["hookSpecificOutput"]["additionalContext"]

    def recorded() -> dict[str, dict[str, object]]:
        entries = fix_store(seeded).read(OWNER, PROJECT).entries
        return {
            str(e.session_id): e.model_extra["recall"]
            for e in entries
            if e.model_extra and "recall" in e.model_extra
        }

    wait_for(lambda: len(recorded()) == 2, "both sessions' turns in the store")
    records = recorded()
    assert records[held]["arm"] == HOLDBACK and records[shown]["arm"] == MEMORY
    shadow = records[held]["shadow"]
    assert isinstance(shadow, list) and shadow and records[held]["injected"] == []
    first = shadow[0]["id"]  # the ZeroDivisionError fix the prompt would have got
    assert first in records[held]["followed"]  # its error met, its file edited: a follow, without seeing it
    injected = records[shown]["injected"]
    assert isinstance(injected, list) and injected[0]["id"] == first and first in records[shown]["followed"]

    monkeypatch.setenv("FIXMEM_DATA_DIR", str(seeded))
    monkeypatch.setenv("FIXMEM_OWNER", OWNER)
    assert main(["impact", "--project", PROJECT, "--since", "3650d", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["arms"][MEMORY]["sessions"], got["arms"][HOLDBACK]["sessions"]) == (1, 1)
    assert got["arms"][HOLDBACK]["follow_rate"] is not None
    assert main(["impact", "--project", PROJECT, "--since", "3650d"]) == 0
    text = capsys.readouterr().out
    assert "memory" in text and "holdback" in text and "lift" in text
