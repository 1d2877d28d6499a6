"""SWE-agent trajectories, classic and v1: commands, the edited file tracked into ``input.path``, outcomes."""

from __future__ import annotations

from ingest.schema import TurnEvent
from tests.ingest.importers.support import FIXTURES, load


def only(relative: str) -> TurnEvent:
    result = load(relative)
    assert result.format == "swe-agent"
    assert len(result.events) == 1
    return result.events[0]


def test_classic_windowed_edit_resolves_the_open_file() -> None:
    event = only("swe-agent/swe-agent__test-repo-i1.traj")
    assert [t.tool for t in event.tool_events] == ["find_file", "open", "edit", "bash", "submit"]
    find, opened, edit, run, submit = event.tool_events
    assert find.input["action"] == 'find_file "missing_colon.py"'
    assert opened.input["path"] == "/klieret__swe-agent-test-repo/tests/missing_colon.py"
    assert edit.input["path"] == "/klieret__swe-agent-test-repo/tests/missing_colon.py"
    assert (edit.input["start_line"], edit.input["end_line"]) == (4, 4)
    assert edit.input["new_str"] == "def division(a: float, b: float) -> float:"
    assert edit.ok is True  # "File updated."
    assert run.input == {"command": "python tests/missing_colon.py"} and run.output == "8.2\n"
    assert submit.output.lstrip().startswith("diff --git a/tests/missing_colon.py b/tests/missing_colon.py")
    assert all(t.exit_code is None for t in event.tool_events)  # SWE-agent writes no exit codes
    assert event.workspace == "/klieret__swe-agent-test-repo"
    assert event.project_key == "klieret/swe-agent-test-repo"
    assert event.user_message.startswith(
        "SyntaxError: invalid syntax\nI'm running `missing_colon.py` as follows:"
    )
    assert event.harness_meta.stop_reason == "submitted"
    assert event.harness_meta.session_id == "swe-agent__test-repo-i1"
    assert (
        event.ts == (FIXTURES / "swe-agent/swe-agent__test-repo-i1.traj").stat().st_mtime
    )  # no times: the file's
    assert event.harness_meta.model_extra == {"ts_derived": True}


def test_classic_search_replace_edit() -> None:
    event = only("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj")
    assert [t.tool for t in event.tool_events] == ["find_file", "open", "edit", "bash", "submit"]
    edit = event.tool_events[2]
    assert edit.input["old_str"] == "def division(a: float, b: float) -> float"
    assert edit.input["new_str"] == "def division(a: float, b: float) -> float:"
    assert edit.input["path"] == "/SWE-agent__test-repo/tests/missing_colon.py"
    assert edit.ok is True  # "Replaced 1 occurrences."
    assert event.tool_events[3].input["command"] == "python3 /SWE-agent__test-repo/tests/missing_colon.py"
    assert event.project_key == "SWE-agent/test-repo"
    assert event.harness_meta.commit is None  # the replay config names "HEAD", not a commit


def test_v1_function_calls_give_the_arguments() -> None:
    event = only("swe-agent/marshmallow-code__marshmallow-1867.traj")
    tools = [t.tool for t in event.tool_events]
    assert tools == [
        "create",
        "insert",
        "bash",
        "bash",
        "find_file",
        "open",
        "edit",
        "edit",
        "bash",
        "bash",
        "submit",
    ]
    create, insert = event.tool_events[0], event.tool_events[1]
    assert create.input["filename"] == "reproduce.py" and create.input["path"] == "/testbed/reproduce.py"
    assert insert.input["path"] == "/testbed/reproduce.py"
    assert insert.input["text"].startswith("from marshmallow.fields import TimeDelta")
    assert [t.input["command"] for t in event.tool_events if t.tool == "bash"] == [
        "python reproduce.py",
        "ls -F",
        "python reproduce.py",
        "rm reproduce.py",
    ]
    assert event.tool_events[5].input["path"] == "/testbed/src/marshmallow/fields.py"
    first, second = event.tool_events[6], event.tool_events[7]
    assert first.input["path"] == second.input["path"] == "/testbed/src/marshmallow/fields.py"
    assert first.input["search"] == "return int(value.total_seconds() / base_unit.total_seconds())"
    assert first.ok is False  # "Your proposed edit has introduced new syntax error(s)"
    assert second.ok is True  # "Text replaced."
    assert event.tool_events[2].output == "344" and event.tool_events[8].output == "345"
    assert event.project_key == "marshmallow-code/marshmallow"
    assert event.harness_meta.model == "gpt-4o"
    meta = event.harness_meta
    assert meta.commit == meta.commit_start == "bfd2593d4b416122e30cdefe0c72d322ef471611"
    assert event.user_message.startswith("TimeDelta serialization precision")
