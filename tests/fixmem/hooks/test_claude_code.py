"""The Claude Code hook: payload -> action (pure), the once-per-session choice, and ``run`` on real files."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from fixmem.hooks import claude_code
from fixmem.hooks.claude_code import Lookup, Publish, Warm, plan
from fixmem.hooks.config import HookConfig
from fixmem.hooks.reader import Query
from fixmem.hooks.session import HEADER, SessionState, choose, estimate_tokens, read_counters
from tests.fixmem.hooks.conftest import OWNER, PROJECT

BASE = {"session_id": "s-1", "transcript_path": "/t/s-1.jsonl", "cwd": "/home/alice/widgets"}


def payload(event: str, **fields: Any) -> dict[str, Any]:
    return {**BASE, "hook_event_name": event, **fields}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            payload("UserPromptSubmit", prompt="fix the parser"),
            Lookup("UserPromptSubmit", Query("fix the parser")),
        ),
        (payload("UserPromptSubmit", prompt="   "), None),
        (
            payload(
                "PostToolUse", tool_name="Read", tool_input={"file_path": "/home/alice/widgets/src/p.py"}
            ),
            Lookup("PostToolUse", Query("src/p.py", files=("src/p.py",)), file="src/p.py"),
        ),
        (
            payload("PostToolUse", tool_name="Edit", tool_input={"file_path": "/elsewhere/x.py"}),
            Lookup(
                "PostToolUse",
                Query("/elsewhere/x.py", files=("/elsewhere/x.py",)),
                file="/elsewhere/x.py",
                edit=True,  # an Edit: a follow of the fixes of that file shown before
            ),
        ),
        (payload("PostToolUse", tool_name="Grep", tool_input={"pattern": "x"}), None),
        (
            payload("PostToolUseFailure", tool_name="Bash", tool_input={"command": "pytest"}, error="E boom"),
            Lookup("PostToolUseFailure", Query("E boom", error="E boom")),
        ),
        (payload("PostToolUseFailure", tool_name="Bash", error="stopped", is_interrupt=True), None),
        (
            payload(
                "PostToolUse", tool_name="Bash", tool_response={"stdout": "ok", "stderr": "", "exit_code": 0}
            ),
            None,
        ),
        (
            payload(
                "PostToolUse",
                tool_name="Bash",
                tool_response={"stdout": "", "stderr": "E bad", "exit_code": 1},
            ),
            None,  # a failed command comes as PostToolUseFailure (the hook does not listen to Bash here)
        ),
        (payload("Stop", stop_hook_active=False), Publish("/t/s-1.jsonl", final=True)),
        (payload("SubagentStop"), Publish("/t/s-1.jsonl", final=False)),
        (payload("SessionStart", source="startup"), Warm()),
        (payload("Notification", message="hi"), None),
    ],
)
def test_plan(body: dict[str, Any], expected: object) -> None:
    assert plan(body) == expected


def test_plan_refuses_a_field_of_the_wrong_type() -> None:
    with pytest.raises(claude_code.MalformedPayload):
        plan(payload("UserPromptSubmit", prompt=["not", "text"]))


def test_choose_injects_each_entry_once_within_the_budgets() -> None:
    lines = [("a", "- [fixed] first"), ("b", "- [fixed] second")]
    first = choose(lines, SessionState(), prompt_budget=600, session_budget=2000)
    assert first.block == f"{HEADER}\n- [fixed] first\n- [fixed] second"
    assert first.state.injected == ("a", "b")
    assert first.state.tokens == estimate_tokens(first.block)
    again = choose([*lines, ("c", "- [partial] third")], first.state, prompt_budget=600, session_budget=2000)
    assert again.block == f"{HEADER}\n- [partial] third"
    spent = choose(
        [("d", "- [fixed] " + "x" * 300)],
        again.state,
        prompt_budget=600,
        session_budget=again.state.tokens + 20,
    )
    assert spent.block == "" and spent.state == again.state  # the session's budget is spent


def config_for(data_dir: Path, **extra: str) -> dict[str, str]:
    """The hook's environment, recalling in-process (the daemon has its own tests: test_daemon.py)."""
    return {
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_PROJECT": PROJECT,
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "0",
        **extra,
    }


def run(body: dict[str, Any], env: dict[str, str]) -> dict[str, Any] | None:
    out = claude_code.run(json.dumps(body).encode(), env)
    return json.loads(out) if out else None


def test_prompt_file_and_error_hooks_inject_a_fix_once_per_session(seeded: Path) -> None:
    env = config_for(seeded)
    got = run(payload("UserPromptSubmit", prompt="apply_discount raises ZeroDivisionError"), env)
    assert got is not None
    out = got["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert out["additionalContext"].startswith(HEADER) and "apply_discount" in out["additionalContext"]
    assert "dark theme" not in out["additionalContext"]
    # the same fix is not injected twice in the session, whichever hook finds it again
    read = payload(
        "PostToolUse", tool_name="Read", tool_input={"file_path": "/home/alice/widgets/invoicer/totals.py"}
    )
    assert run(read, env) is None
    failure = payload("PostToolUseFailure", tool_name="Bash", error="ZeroDivisionError: division by zero")
    assert run(failure, env) is None
    # another session gets it again, from the file hook, once per file (its prompt names another fix)
    assert (
        run({**payload("UserPromptSubmit", prompt="a discount rounding bug"), "session_id": "s-2"}, env)
        is None
    )
    other = {**read, "session_id": "s-2"}
    got = run(other, env)
    assert got is not None and "apply_discount" in got["hookSpecificOutput"]["additionalContext"]
    assert run(other, env) is None


def test_a_failed_command_recalls_the_fix_of_its_error(seeded: Path) -> None:
    body = payload(
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "pytest -q"},
        error='Traceback …\n  File "invoicer/totals.py", line 16\nZeroDivisionError: division by zero',
    )
    got = run(body, config_for(seeded))
    assert got is not None
    assert got["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    assert "apply_discount" in got["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'{"hook_event_name": 7}'])
def test_malformed_input_prints_nothing_and_is_counted(data_dir: Path, raw: bytes) -> None:
    assert claude_code.run(raw, config_for(data_dir)) == ""
    assert read_counters(data_dir / "hooks") == {"malformed": 1}
    assert "malformed" in (data_dir / "hooks" / "hook.log").read_text()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_api_down_prints_nothing_and_is_counted(data_dir: Path) -> None:
    env = config_for(data_dir, FIXMEM_API_URL=f"http://127.0.0.1:{_closed_port()}", FIXMEM_API_TOKEN="t")
    assert HookConfig.from_env(env).remote
    assert claude_code.run(json.dumps(payload("UserPromptSubmit", prompt="fix it")).encode(), env) == ""
    assert read_counters(data_dir / "hooks") == {"unavailable": 1}


def test_unreadable_store_prints_nothing_and_is_counted(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    env = config_for(blocked / "data")
    assert claude_code.run(json.dumps(payload("UserPromptSubmit", prompt="fix it")).encode(), env) == ""


def test_memory_off_answers_nothing(seeded: Path) -> None:
    env = config_for(seeded, FIXMEM_FIX_MEMORY_ENABLED="false")
    assert run(payload("UserPromptSubmit", prompt="apply_discount ZeroDivisionError"), env) is None


def test_the_cli_command_answers_like_the_script(
    seeded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fixmem.cli import main  # noqa: PLC0415

    for name, value in config_for(seeded).items():
        monkeypatch.setenv(name, value)
    body = json.dumps(payload("UserPromptSubmit", prompt="apply_discount raises ZeroDivisionError"))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(body.encode())))
    assert main(["hook", "claude-code"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "apply_discount" in out["hookSpecificOutput"]["additionalContext"]
