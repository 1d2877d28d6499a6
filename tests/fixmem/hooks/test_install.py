"""``fixmem install|uninstall claude-code``: merge ours, keep theirs, idempotent, dry run, remove ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixmem.cli import main
from fixmem.hooks.install import EVENTS, is_ours, merged, removed

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


def test_commands_write_diff_and_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS))
    project = ["--project-dir", str(tmp_path)]
    assert main(["install", "claude-code", "--dry-run", *project]) == 0
    assert "+" in capsys.readouterr().out and json.loads(settings.read_text()) == THEIRS  # dry run: unchanged
    assert main(["install", "claude-code", *project]) == 0
    installed = json.loads(settings.read_text())
    assert sum(
        is_ours(h) for groups in installed["hooks"].values() for g in groups for h in g["hooks"]
    ) == len(EVENTS)
    capsys.readouterr()
    assert main(["install", "claude-code", *project]) == 0
    assert "nothing to change" in capsys.readouterr().out
    assert main(["uninstall", "claude-code", *project]) == 0
    assert json.loads(settings.read_text()) == THEIRS


def test_a_broken_settings_file_is_not_overwritten(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    assert main(["install", "claude-code", "--project-dir", str(tmp_path)]) == 78
    assert settings.read_text() == "{not json"
