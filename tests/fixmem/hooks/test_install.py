"""``fixmem install|uninstall claude-code``: merge ours, keep theirs, idempotent, dry run, remove ours."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from fixmem.cli import main
from fixmem.hooks.claude_code import plan
from fixmem.hooks.config import HookConfig
from fixmem.hooks.install import EVENTS, is_ours, merged, removed
from tests.fixmem.hooks.conftest import install_and_prompt_from_another_shell

THEIRS: dict[str, Any] = {
    "model": "opus",
    "hooks": {
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "ruff format"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}
CMD = "/venv/bin/fixmem-hook claude-code"


def test_merge_adds_ours_to_every_event_and_keeps_theirs() -> None:
    out = merged(THEIRS, CMD)
    assert out["model"] == "opus"
    for event, matcher in EVENTS.items():
        ours = [g for g in out["hooks"][event] if any(is_ours(h) for h in g["hooks"])]
        assert len(ours) == 1 and ours[0].get("matcher") == matcher
    assert out["hooks"]["PostToolUse"][0] == THEIRS["hooks"]["PostToolUse"][0]
    assert out["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    assert merged(out, CMD) == out  # idempotent
    assert merged(out, "/other/python -m fixmem.hooks claude-code") != out  # ours replaced, not doubled
    assert removed(out) == THEIRS


def test_remove_from_nothing_is_nothing() -> None:
    assert removed({}) == {}
    assert removed(merged({}, CMD)) == {}


def _ours(settings: dict[str, Any]) -> list[str]:
    return [
        h["command"]
        for groups in settings.get("hooks", {}).values()
        for g in groups
        for h in g["hooks"]
        if is_ours(h)
    ]


@pytest.fixture
def install_env(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Path:
    """The installing shell: FIXMEM_OWNER=alice, FIXMEM_DATA_DIR set, no API, no Redis."""
    for name in [n for n in os.environ if n.startswith("FIXMEM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FIXMEM_OWNER", "alice")
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    return data_dir


def test_commands_write_diff_and_remove(
    tmp_path: Path, install_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps(THEIRS))
    project = ["--project-dir", str(tmp_path)]
    assert main(["install", "claude-code", "--dry-run", *project]) == 0
    assert "+" in capsys.readouterr().out and json.loads(local.read_text()) == THEIRS  # dry run: unchanged
    assert main(["install", "claude-code", *project]) == 0
    assert len(_ours(json.loads(local.read_text()))) == len(EVENTS)
    assert not (tmp_path / ".claude" / "settings.json").exists()  # the team's file is not created
    capsys.readouterr()
    assert main(["install", "claude-code", *project]) == 0
    assert "nothing to change" in capsys.readouterr().out
    assert main(["uninstall", "claude-code", *project]) == 0
    assert json.loads(local.read_text()) == THEIRS


def test_the_local_install_pins_the_installing_shell(tmp_path: Path, install_env: Path) -> None:
    assert main(["install", "claude-code", "--project-dir", str(tmp_path)]) == 0
    commands = set(_ours(json.loads((tmp_path / ".claude" / "settings.local.json").read_text())))
    assert len(commands) == 1
    words = shlex.split(commands.pop())
    assert words[:2] == ["FIXMEM_DATA_DIR=" + str(install_env), "FIXMEM_OWNER=alice"]
    assert not any(w.startswith(("FIXMEM_API", "FIXMEM_REDIS")) for w in words)


def test_the_token_is_pinned_as_a_file_never_as_text(
    tmp_path: Path, install_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIXMEM_API_URL", "http://127.0.0.1:8765/")
    monkeypatch.setenv("FIXMEM_API_TOKEN", "s3cret-token-of-alice")
    monkeypatch.setenv("FIXMEM_REDIS_URL", "redis://127.0.0.1:6390/0")
    assert main(["install", "claude-code", "--project-dir", str(tmp_path)]) == 0
    text = (tmp_path / ".claude" / "settings.local.json").read_text()
    assert "s3cret" not in text
    pinned = dict(w.split("=", 1) for w in shlex.split(_ours(json.loads(text))[0]) if "=" in w)
    token_file = Path(pinned["FIXMEM_API_TOKEN_FILE"])
    assert token_file.read_text().strip() == "s3cret-token-of-alice"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert pinned["FIXMEM_API_URL"] == "http://127.0.0.1:8765"
    assert pinned["FIXMEM_REDIS_URL"] == "redis://127.0.0.1:6390/0"
    config = HookConfig.from_env(pinned)  # what the hook reads from the pinned command alone
    assert (config.owner, config.api_token, config.remote) == ("alice", "s3cret-token-of-alice", True)


def test_shared_and_local_never_both_hold_ours(tmp_path: Path, install_env: Path) -> None:
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(json.dumps(THEIRS))
    (claude / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}))
    project = ["--project-dir", str(tmp_path)]
    assert main(["install", "claude-code", "--shared", *project]) == 0
    shared = json.loads((claude / "settings.json").read_text())
    assert set(_ours(shared)) == {"fixmem-hook claude-code"}  # from PATH: no absolute path, nothing pinned
    assert (
        "/" not in json.dumps(_ours(shared))
        and str(install_env) not in (claude / "settings.json").read_text()
    )
    assert main(["install", "claude-code", *project]) == 0  # back to the per-machine file
    assert _ours(json.loads((claude / "settings.json").read_text())) == []
    assert json.loads((claude / "settings.json").read_text()) == THEIRS
    assert len(_ours(json.loads((claude / "settings.local.json").read_text()))) == len(EVENTS)
    assert main(["install", "claude-code", "--shared", *project]) == 0
    assert _ours(json.loads((claude / "settings.local.json").read_text())) == []
    assert main(["uninstall", "claude-code", *project]) == 0  # cleans both, keeps every other entry
    assert json.loads((claude / "settings.json").read_text()) == THEIRS
    assert json.loads((claude / "settings.local.json").read_text()) == {
        "permissions": {"allow": ["Bash(ls)"]}
    }
    assert main(["install", "claude-code", "--shared", "--user", *project]) == 2


def test_a_hook_started_from_another_shell_runs_as_the_installing_user(
    tmp_path: Path, seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pinned command, run through a shell whose environment names another user and no data dir."""
    _, _, done = install_and_prompt_from_another_shell(tmp_path, seeded, monkeypatch)
    assert done.returncode == 0 and "apply_discount" in done.stdout, done


# Claude Code's tools today (MultiEdit is gone); a Bash PostToolUse carries no exit status (captured shape)
KNOWN_TOOLS = ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "Task", "WebFetch", "NotebookEdit")
TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")


def _tool_payload(event: str, tool: str) -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "session_id": "s",
        "cwd": "/w",
        "transcript_path": "/t.jsonl",
        "tool_name": tool,
        "tool_input": {"file_path": "/w/a.py", "command": "make", "pattern": "x"},
        "tool_response": {"stdout": "", "stderr": "E boom", "interrupted": False, "isImage": False},
        "error": "E boom",
    }


@pytest.mark.parametrize("event", TOOL_EVENTS)
def test_the_matchers_start_a_process_only_for_what_the_hook_answers(event: str) -> None:
    matched = set((EVENTS.get(event) or "").split("|")) - {""}
    answered = {tool for tool in KNOWN_TOOLS if plan(_tool_payload(event, tool)) is not None}
    assert matched == answered  # the old "Read|Edit|Write|MultiEdit|Bash" fails here


def test_every_event_the_hook_handles_is_installed_and_no_other() -> None:
    base = {"session_id": "s", "cwd": "/w", "transcript_path": "/t.jsonl", "prompt": "p"}
    events = ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "PreToolUse", "Notification",
              "PreCompact", "SessionEnd")  # fmt: skip
    handled = {e for e in events if plan({**base, "hook_event_name": e}) is not None}
    assert handled | set(TOOL_EVENTS) == set(EVENTS)


def test_a_broken_settings_file_is_not_overwritten(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    assert main(["install", "claude-code", "--shared", "--project-dir", str(tmp_path)]) == 78
    assert settings.read_text() == "{not json"
