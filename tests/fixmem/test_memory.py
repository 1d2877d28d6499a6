"""The documented Python API: FixMemory and the module-level functions, on real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import fixmem
import fixmem.memory
from fixmem import FixMemory
from fixmem.settings import Settings
from ingest.errors import InvalidEvent

NOW = 1_732_450_000.0
PROJECT = "/home/u/my-app"

FAILING = (
    "F.\n=================================== FAILURES ===================================\n"
    "    def test_login():\n>       login(timeout=30)\n"
    "E       ValueError: timeout after 30 seconds\n\nsrc/auth.py:12: ValueError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_auth.py::test_login - ValueError: timeout after 30 seconds\n"
    "1 failed, 1 passed in 0.12s\n"
)
EDIT_DIFF = (
    "--- a/src/auth.py\n+++ b/src/auth.py\n@@ -10,3 +10,3 @@ def login(timeout):\n"
    "-    wait(timeout)\n+    wait(timeout * 2)\n"
)


def turn_events(*, passing: bool = True) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"tool": "bash", "input": {"command": "pytest -q"}, "output": FAILING, "exit_code": 1},
        {"tool": "edit", "input": {"path": "src/auth.py", "old_str": "wait(timeout)"}, "diff": EDIT_DIFF},
    ]
    if passing:
        events.append(
            {
                "tool": "bash",
                "input": {"command": "pytest -q"},
                "output": "2 passed in 0.10s\n",
                "exit_code": 0,
            }
        )
    return events


@pytest.fixture
def memory(data_dir: Path) -> FixMemory:
    return FixMemory(settings=Settings.from_env({"FIXMEM_DATA_DIR": str(data_dir)}), clock=lambda: NOW)


def record(memory: FixMemory, **overrides: Any) -> Any:
    args: dict[str, Any] = {
        "project_key": PROJECT,
        "user_message": "fix the login timeout bug",
        "tool_events": turn_events(),
        "workspace": PROJECT,
    }
    args.update(overrides)
    return memory.record_from_turn("alice", **args)


def log_lines(data_dir: Path) -> list[dict[str, Any]]:
    return [
        orjson.loads(line) for path in data_dir.rglob("*.jsonl") for line in path.read_bytes().splitlines()
    ]


def test_record_recall_block_stats_forget(memory: FixMemory, data_dir: Path) -> None:
    entry = record(memory)
    assert entry is not None
    assert entry.outcome == "fixed"
    assert entry.files == ["src/auth.py"]
    assert any(e.endswith("ValueError: timeout after # seconds") for e in entry.errors), entry.errors
    assert [line["id"] for line in log_lines(data_dir)] == [entry.id]

    recalled = memory.recall(
        "alice", PROJECT, "login times out", errors=["ValueError: timeout after 5 seconds"]
    )
    assert [r.entry.id for r in recalled] == [entry.id]
    block = memory.prompt_block(recalled)
    assert block.startswith("Past fixes in this project:")
    assert "src/auth.py" in block

    stats = memory.stats("alice", PROJECT)
    assert stats["total"] == 1
    assert memory.forget("alice", entry.id) is True
    assert memory.recall("alice", PROJECT, "login times out") == []
    assert memory.forget("alice", entry.id) is False
    assert record(memory) is None  # the same turn again: what was forgotten stays forgotten
    assert memory.recall("alice", PROJECT, "login times out") == []


def test_recording_the_same_turn_twice_writes_it_once(data_dir: Path) -> None:
    ticks = iter([NOW, NOW + 5.0])  # a real clock moves between the two calls
    memory = FixMemory(
        settings=Settings.from_env({"FIXMEM_DATA_DIR": str(data_dir)}), clock=lambda: next(ticks)
    )
    first = record(memory)
    second = record(memory)
    assert first is not None and second is not None
    assert first.id == second.id
    assert len(log_lines(data_dir)) == 1


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        (
            {"tool_events": [{"tool": "bash", "input": {"command": "ls"}, "output": "a b", "exit_code": 0}]},
            "no file",
        ),
        ({"tool_events": [{"tool": "read", "input": {"path": "src/auth.py"}, "output": "x"}]}, "reads only"),
    ],
)
def test_turns_that_touched_no_file_record_nothing(
    memory: FixMemory, data_dir: Path, overrides: dict[str, Any], why: str
) -> None:
    assert record(memory, **overrides) is None, why
    assert log_lines(data_dir) == []


def test_no_owner_and_disabled_memory_record_nothing(data_dir: Path) -> None:
    env = {"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_FIX_MEMORY_ENABLED": "false"}
    off = FixMemory(settings=Settings.from_env(env), clock=lambda: NOW)
    assert record(off) is None
    on = FixMemory(settings=Settings.from_env({"FIXMEM_DATA_DIR": str(data_dir)}), clock=lambda: NOW)
    assert on.record_from_turn("", project_key=PROJECT, user_message="x", tool_events=turn_events()) is None
    assert log_lines(data_dir) == []
    assert off.recall("alice", PROJECT, "login timeout") == []


def test_unrelated_query_abstains(memory: FixMemory) -> None:
    assert record(memory) is not None
    recalled = memory.recall("alice", PROJECT, "add dark mode to the settings page")
    assert recalled == []
    assert memory.prompt_block(recalled) == ""


def test_partial_and_unverified_outcomes(memory: FixMemory) -> None:
    partial = record(memory, tool_events=turn_events(passing=False)[::-1], user_message="retry login")
    unverified = record(memory, tool_events=turn_events()[1:2], user_message="tweak login wait")
    assert partial is not None and partial.outcome == "partial"
    assert unverified is not None and unverified.outcome == "unverified"


def test_malformed_input_is_a_clear_error(memory: FixMemory, data_dir: Path) -> None:
    with pytest.raises(InvalidEvent) as info:
        record(memory, tool_events=[{"input": {"command": "pytest"}}])
    assert "tool" in info.value.message
    assert log_lines(data_dir) == []


def test_workspace_notes_come_first_in_the_block(memory: FixMemory, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".fixmem").mkdir(parents=True)
    (workspace / ".fixmem" / "memory.md").write_text(
        "## gotcha: the auth tests need REDIS_URL\nset it first\n"
    )
    assert record(memory) is not None
    recalled = memory.recall("alice", PROJECT, "login timeout")
    block = memory.prompt_block(recalled, workspace=str(workspace))
    assert block.index("REDIS_URL") < block.index("Past fixes in this project:")


def test_module_functions_use_the_environment(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setattr(fixmem.memory, "_default", None)
    entry = fixmem.record_from_turn(
        "alice", project_key=PROJECT, user_message="fix the login timeout bug", tool_events=turn_events()
    )
    assert entry is not None
    assert [line["id"] for line in log_lines(data_dir)] == [entry.id]
    recalled = fixmem.recall("alice", PROJECT, "fix the login timeout")
    assert [r.entry.id for r in recalled] == [entry.id]
    assert "src/auth.py" in fixmem.prompt_block(recalled)
    assert fixmem.stats("alice", PROJECT)["total"] == 1
    assert fixmem.forget("alice", entry.id) is True


def test_an_explicit_event_id_or_time_keeps_distinct_turns_apart(memory: FixMemory, data_dir: Path) -> None:
    assert record(memory, event_id="turn-1") is not None
    assert record(memory, event_id="turn-2") is not None
    assert record(memory, ts=NOW + 60) is not None
    assert len(log_lines(data_dir)) == 3


def test_zero_budget_means_an_empty_block(memory: FixMemory) -> None:
    assert record(memory) is not None
    recalled = memory.recall("alice", PROJECT, "fix the login timeout")
    assert recalled
    assert memory.prompt_block(recalled, budget_tokens=0) == ""


def test_notes_stay_when_known_commits_are_given(memory: FixMemory, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".fixmem").mkdir(parents=True)
    (workspace / ".fixmem" / "memory.md").write_text(
        "## gotcha: the auth tests need REDIS_URL\n"
        "<!-- learned 2026-08-18 · commit abc1234 -->\nset it first\n"
    )
    assert record(memory, harness_meta={"commit": "f" * 40}) is not None
    recalled = memory.recall("alice", PROJECT, "login timeout")
    block = memory.prompt_block(recalled, workspace=str(workspace), known_commits={"abc1234" + "0" * 33})
    assert "REDIS_URL" in block
    assert "stale: commit gone" in block  # the fix's commit is not among the known ones


def test_without_a_project_key_the_workspace_names_the_project(memory: FixMemory, tmp_path: Path) -> None:
    checkout = tmp_path / "widgets"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/widgets.git\n')
    entry = record(memory, project_key="", workspace=str(checkout))
    assert entry is not None and entry.project == "github.com/acme/widgets"
    assert [e.id for e in memory.store.read("alice", "github.com/acme/widgets").entries] == [entry.id]
    with pytest.raises(InvalidEvent):  # neither a key nor a workspace
        record(memory, project_key="", workspace="")
