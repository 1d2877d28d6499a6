"""The local recall daemon: the same answers as recall in-process, cold starts, idle exit, failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixmem.hooks import claude_code
from fixmem.hooks.config import HookConfig
from fixmem.hooks.daemon import answer
from fixmem.hooks.daemon_client import SOCKET_NAME, DaemonReader, daemon_running
from fixmem.hooks.reader import ColdStart, LocalReader, Query
from fixmem.hooks.session import read_counters
from tests.fixmem.hooks.conftest import OWNER, PROJECT

DEADLINE_SECONDS = 60.0
QUERIES = [
    Query("apply_discount raises ZeroDivisionError"),
    Query("parse_csv drops quoted commas again src/csv_io.py", files=("src/csv_io.py",)),
    Query("ZeroDivisionError: division by zero", error="ZeroDivisionError: division by zero"),
    Query("login times out after 30 seconds on staging"),
    Query("add a --verbose flag"),
]


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    return {
        **clean,
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_PROJECT": PROJECT,
        "FIXMEM_HOOK_COLD_WAIT_SECONDS": "60",  # a loaded test machine: cold starts are not what is tested
        "FIXMEM_HOOK_TIMEOUT_SECONDS": "30",
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "20",  # a daemon the test left behind goes away on its own
        **extra,
    }


def wait_for(predicate: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def payload(event: str, **fields: Any) -> bytes:
    body = {"session_id": "d-1", "transcript_path": "/t/d-1.jsonl", "cwd": "/w", "hook_event_name": event}
    return json.dumps({**body, **fields}).encode()


def test_the_daemon_answers_as_recall_in_process(seeded: Path) -> None:
    config = HookConfig.from_env(env_for(seeded))
    through_daemon = DaemonReader(config, wait_cold=True)
    in_process = LocalReader(config)
    answers = [through_daemon.candidates(PROJECT, q) for q in QUERIES]
    assert through_daemon.cold is False  # the first call started it; this one found it warm
    assert answers == [in_process.candidates(PROJECT, q) for q in QUERIES]
    assert answers[0] and answers[3] and not answers[4]
    assert (seeded / "hooks" / SOCKET_NAME).stat().st_mode & 0o077 == 0  # only the data dir's user


def test_a_cold_tool_hook_answers_nothing_and_warms_the_daemon(seeded: Path) -> None:
    env = env_for(seeded)
    failure = payload("PostToolUseFailure", tool_name="Bash", error="ZeroDivisionError: division by zero")
    assert claude_code.run(failure, env) == ""
    assert read_counters(seeded / "hooks") == {"cold": 1}
    reader = DaemonReader(HookConfig.from_env(env))
    wait_for(lambda: (seeded / "hooks" / SOCKET_NAME).exists(), "the daemon's socket")
    assert reader.candidates(PROJECT, QUERIES[0])  # warm now
    got = json.loads(claude_code.run(failure, env))  # the same hook: this time it answers
    assert "apply_discount" in got["hookSpecificOutput"]["additionalContext"]


def test_a_cold_prompt_hook_waits_for_the_daemon(seeded: Path) -> None:
    out = claude_code.run(
        payload("UserPromptSubmit", prompt="apply_discount raises ZeroDivisionError"), env_for(seeded)
    )
    assert "apply_discount" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert read_counters(seeded / "hooks") == {}


def test_a_tool_hook_that_finds_the_daemon_starting_raises_cold_start(seeded: Path) -> None:
    reader = DaemonReader(HookConfig.from_env(env_for(seeded)))
    with pytest.raises(ColdStart):
        reader.candidates(PROJECT, QUERIES[0])
    assert reader.cold
    wait_for(lambda: (seeded / "hooks" / SOCKET_NAME).exists(), "the daemon it started")


def test_the_daemon_sees_a_log_that_changed(seeded: Path) -> None:
    from tests.configs import fix_store  # noqa: PLC0415
    from tests.store.factories import make_entry  # noqa: PLC0415

    reader = DaemonReader(HookConfig.from_env(env_for(seeded)), wait_cold=True)
    query = Query("the export button crashes on unicode names")
    assert reader.candidates(PROJECT, query) == []
    fix_store(seeded).append(
        OWNER, PROJECT, [make_entry(9, "export button crashes on unicode names", project=PROJECT)]
    )
    assert next(c.line for c in reader.candidates(PROJECT, query)).count("export button") == 1


def test_the_daemon_exits_when_idle_and_a_stale_socket_is_replaced(seeded: Path) -> None:
    env = env_for(seeded, FIXMEM_HOOK_DAEMON_IDLE_SECONDS="1")
    daemon = subprocess.Popen([sys.executable, "-m", "fixmem.hooks.daemon"], env=env)
    assert daemon.wait(timeout=DEADLINE_SECONDS) == 0  # idle for a second: gone, socket removed
    assert not (seeded / "hooks" / SOCKET_NAME).exists()
    assert not daemon_running(str(seeded / "hooks"))
    (seeded / "hooks" / SOCKET_NAME).write_text("")  # a crashed daemon's leftover
    reader = DaemonReader(HookConfig.from_env(env), wait_cold=True)
    assert reader.candidates(PROJECT, QUERIES[0]) and reader.cold


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[]",
        b'{"v": 99}',
        b'{"v": 1, "q": "x"}',
        b'{"v": 1, "q": "x", "owner": "a", "project": "p", "k": "many", "budget_tokens": 1}',
    ],
)
def test_a_malformed_request_gets_an_error_answer(seeded: Path, raw: bytes) -> None:
    got = answer(LocalReader(HookConfig.from_env(env_for(seeded))), raw)
    assert got["ok"] is False and got["error"]


def test_a_daemon_that_cannot_start_is_counted_and_invisible(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    env = env_for(blocked / "data")
    assert claude_code.run(payload("UserPromptSubmit", prompt="fix it"), env) == ""


def test_session_start_warms_the_daemon_for_the_first_prompt(seeded: Path) -> None:
    env = env_for(seeded)
    assert claude_code.run(payload("SessionStart", source="startup"), env) == ""
    wait_for(lambda: (seeded / "hooks" / SOCKET_NAME).exists(), "the daemon SessionStart started")
    reader = DaemonReader(HookConfig.from_env(env))  # a tool hook's reader: it does not wait
    assert reader.candidates(PROJECT, QUERIES[0]) and not reader.cold
    assert claude_code.run(payload("SessionStart", source="resume"), env) == ""  # one daemon, not two
    assert read_counters(seeded / "hooks") == {}
