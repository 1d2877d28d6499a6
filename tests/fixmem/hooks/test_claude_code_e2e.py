"""Claude Code hooks end to end: real hook processes, the detached publisher, a real Redis, the pipeline,
real files. Task 1's turn is published at ``Stop``; task 2 (a related bug) gets task 1's fix with its
first prompt, an unrelated task 3 gets nothing; with fixmem or Redis down the agent sees nothing."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from fixmem.hooks.install import hook_command
from fixmem.hooks.session import read_counters
from fixmem.settings import Settings
from ingest import keys
from ingest.project_key import project_key_for
from tests.configs import fix_store
from tests.fixmem.hooks.conftest import git_checkout
from tests.fixmem.hooks.transcripts import Transcript, hook_payload
from tests.fixmem.test_pipeline_e2e import drain

OWNER = "alice"
DEADLINE_SECONDS = 60.0


def hook(payload: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command ``fixmem install claude-code`` writes, run as Claude Code runs it."""
    return subprocess.run(
        shlex.split(hook_command()),
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    repo = tmp_path / "calc"
    (repo / "calc").mkdir(parents=True)
    (repo / "calc" / "stats.py").write_text("def average(xs):\n    return sum(xs) / len(xs)\n")
    return git_checkout(repo, "git@github.com:acme/calc.git")


def environment(data_dir: Path, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    return {
        **clean,
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "20",  # the recall daemon the hooks start outlives no test long
        "FIXMEM_HOOK_COLD_WAIT_SECONDS": "60",  # a loaded test machine: the first prompt waits for it
        **extra,
    }


def task_one(workspace: Path, home: Path) -> Transcript:
    stats = str(workspace / "calc" / "stats.py")
    return (
        Transcript(home / "s1.jsonl", "11111111-aaaa", str(workspace))
        .prompt("average() in calc/stats.py raises ZeroDivisionError on an empty list")
        .tool(
            "Bash",
            {"command": "pytest -q tests/test_stats.py"},
            "Exit code 1\nE   ZeroDivisionError: division by zero\n1 failed in 0.02s",
            error=True,
        )
        .tool("Read", {"file_path": stats}, "def average(xs):\n    return sum(xs) / len(xs)\n")
        .tool(
            "Edit",
            {
                "file_path": stats,
                "old_string": "    return sum(xs) / len(xs)\n",
                "new_string": "    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n",
            },
            "The file calc/stats.py has been updated.",
        )
        .tool("Bash", {"command": "pytest -q tests/test_stats.py"}, "1 passed in 0.01s")
        .reply("average() now returns 0.0 for an empty list; the test passes.")
    )


def test_a_published_turn_reaches_the_next_related_session(
    workspace: Path, data_dir: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    env = environment(data_dir, FIXMEM_REDIS_URL=redis_url)
    one = task_one(workspace, tmp_path / "transcripts")
    one.write()

    # task 1 starts with an empty memory: nothing injected
    first = hook(hook_payload("UserPromptSubmit", one, prompt=one.records[0]["message"]["content"]), env)
    assert (first.returncode, first.stdout) == (0, "")
    # its turn is published at Stop by a detached publisher; the hook itself prints nothing
    stop = hook(hook_payload("Stop", one, stop_hook_active=False), env)
    assert (stop.returncode, stop.stdout) == (0, "")
    wait_for(lambda: redis_client.xlen(keys.DEFAULT_STREAM) == 1, "the turn on the stream")
    settings = Settings.from_env(
        {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_READ_BLOCK_MS": "20"}
    )
    drain(settings, redis_client)
    project = project_key_for(str(workspace))
    assert project == "github.com/acme/calc"  # the importer's key for that session: backfill and live meet
    (entry,) = fix_store(data_dir).read(OWNER, project).entries
    assert entry.outcome == "fixed" and entry.files == ["calc/stats.py"]

    # Stop again (a later turn, a retried hook): the same turn is not published twice
    publisher = [sys.executable, "-m", "fixmem.hooks.publisher", "--transcript", str(one.path)]
    publisher += ["--session", one.session_id, "--cwd", str(workspace), "--final"]
    again = subprocess.run(publisher, env=env, check=True, timeout=60)
    assert again.returncode == 0 and redis_client.xlen(keys.DEFAULT_STREAM) == 1

    # task 2, a related bug in the same function: its first prompt gets task 1's fix
    two = Transcript(tmp_path / "transcripts" / "s2.jsonl", "22222222-bbbb", str(workspace))
    asked = "average() in calc/stats.py raises ZeroDivisionError when all weights are zero"
    got = hook(hook_payload("UserPromptSubmit", two, prompt=asked), env)
    assert got.returncode == 0 and got.stdout
    context = json.loads(got.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert entry.task[:40] in context["additionalContext"]
    # … and not a second time when it reads the file the fix touched
    read = hook_payload(
        "PostToolUse", two, tool_name="Read", tool_input={"file_path": str(workspace / "calc/stats.py")}
    )
    assert hook(read, env).stdout == ""

    # an unrelated task 3 starts with nothing
    three = Transcript(tmp_path / "transcripts" / "s3.jsonl", "33333333-cccc", str(workspace))
    unrelated = hook(
        hook_payload("UserPromptSubmit", three, prompt="add a --verbose flag to the command line"), env
    )
    assert (unrelated.returncode, unrelated.stdout) == (0, "")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_fixmem_and_redis_down_are_invisible_to_the_agent(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    port = _closed_port()
    env = environment(
        data_dir,
        FIXMEM_REDIS_URL=f"redis://127.0.0.1:{port}/0",
        FIXMEM_API_URL=f"http://127.0.0.1:{port}",
        FIXMEM_API_TOKEN="tok",
    )
    one = task_one(workspace, tmp_path / "transcripts")
    one.write()
    payloads = [
        hook_payload("UserPromptSubmit", one, prompt="average() raises ZeroDivisionError"),
        hook_payload(
            "PostToolUse", one, tool_name="Edit", tool_input={"file_path": str(workspace / "calc/stats.py")}
        ),
        hook_payload(
            "PostToolUseFailure", one, tool_name="Bash", tool_input={"command": "pytest"}, error="E boom"
        ),
        hook_payload("Stop", one, stop_hook_active=False),
    ]
    for body in payloads:
        done = hook(body, env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    for raw in ("", "{not json", "[]"):
        done = subprocess.run(
            [sys.executable, "-m", "fixmem.hooks", "claude-code"], input=raw, env=env, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    hooks_dir = data_dir / "hooks"
    wait_for(lambda: read_counters(hooks_dir).get("spooled") == 1, "the detached publisher's spool count")
    assert read_counters(hooks_dir) == {"unavailable": 3, "malformed": 3, "spooled": 1}


def test_a_stop_with_redis_down_is_delivered_by_the_next_hook_call(
    workspace: Path, data_dir: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """The session's last turn, published while Redis does not answer, is spooled on disk; the next prompt
    hook (Redis answering) sends it. Before the spool the turn was lost (only a failure was counted)."""
    one = task_one(workspace, tmp_path / "transcripts")
    one.write()
    down = environment(data_dir, FIXMEM_REDIS_URL=f"redis://127.0.0.1:{_closed_port()}/0")
    assert hook(hook_payload("Stop", one, stop_hook_active=False), down).returncode == 0
    spool = data_dir / "hooks" / "spool"
    wait_for(lambda: read_counters(data_dir / "hooks").get("spooled") == 1, "the turn spooled")
    assert [p.suffix for p in spool.iterdir()] == [".jsonl"] and redis_client.xlen(keys.DEFAULT_STREAM) == 0
    up = environment(data_dir, FIXMEM_REDIS_URL=redis_url, FIXMEM_HOOK_DAEMON_IDLE_SECONDS="0")
    done = hook(hook_payload("UserPromptSubmit", one, prompt="an unrelated question"), up)
    assert done.returncode == 0
    wait_for(lambda: redis_client.xlen(keys.DEFAULT_STREAM) == 1, "the spooled turn on the stream")
    wait_for(lambda: not any(spool.iterdir()), "the spool emptied")
    (entry,) = redis_client.xrange(keys.DEFAULT_STREAM)
    assert b"ZeroDivisionError" in entry[1][keys.EVENT_FIELD]
    again = hook(hook_payload("Stop", one, stop_hook_active=False), up)  # the session counts it published
    assert again.returncode == 0 and redis_client.xlen(keys.DEFAULT_STREAM) == 1
