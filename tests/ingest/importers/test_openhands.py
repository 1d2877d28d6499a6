"""OpenHands evaluation output, resolver output and exported event lists."""

from __future__ import annotations

import orjson

from ingest.importers.openhands import parse
from tests.ingest.importers.support import FIXTURES, load

PARSER_C = "/workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c"


def test_evaluation_record_is_one_turn_with_runs_reads_and_edits() -> None:
    result = load("openhands/multi_swe_bench_example/output.jsonl")
    assert result.format == "openhands" and len(result.events) == 1
    event = result.events[0]
    tools = [t.tool for t in event.tool_events]
    assert tools.count("run") == 13 and tools.count("read") == 6 and tools.count("edit") == 2
    runs = [t for t in event.tool_events if t.tool == "run"]
    assert runs[0].input == {"command": "ls -l /workspace/ponylang__ponyc__0.1"}
    assert [t.exit_code for t in runs] == [0, 0, 0, 0, 0, 0, 0, 127, 2, 2, 127, 0, 127]
    assert [t.ok for t in runs][7:] == [
        False,
        False,
        False,
        False,
        True,
        False,
    ]  # the observations' "success"
    assert runs[7].output == "bash: ponyc: command not found"
    failed, applied = (t for t in event.tool_events if t.tool == "edit")
    assert failed.input["path"] == applied.input["path"] == PARSER_C
    assert failed.input["command"] == "str_replace" and "old_str" in failed.input
    assert failed.ok is False and failed.diff is None  # "ERROR: No replacement was performed"
    assert applied.ok is True
    assert applied.diff is not None and applied.diff.splitlines()[:2] == [
        f"--- {PARSER_C}",
        f"+++ {PARSER_C}",
    ]
    assert "+  SET_FLAG(AST_FLAG_IN_PARENS);" in applied.diff
    assert "thought" not in applied.input and "impl_source" not in applied.input
    assert event.project_key == "ponylang/ponyc"
    assert event.workspace == "/workspace/ponylang__ponyc__0.1"
    assert event.user_message.startswith(
        "ponyc segfaults when trying to match using a single element tuple form"
    )
    meta = event.harness_meta
    assert meta.model == "openai/openrouter-llama-4-maverick"
    assert meta.session_id == "ponylang__ponyc-4595"
    assert meta.commit is not None and len(meta.commit) == 40
    assert meta.stop_reason == "finish" and meta.model_extra == {"task_completed": "partial"}
    assert event.ts == 1746030862.948624  # 2025-04-30T16:34:22.948624 (the finish action), read as UTC
    assert runs[0].ts == 1746030777.821635


def test_resolver_output_has_no_ids_or_times_and_pairs_by_position() -> None:
    result = load("openhands/resolver_mock_output/output.jsonl")
    license_turn, dark_mode = result.events
    assert [t.tool for t in license_turn.tool_events] == ["run", "run_ipython", "run"]
    assert [t.input.get("command") for t in license_turn.tool_events] == [
        "touch LICENSE",
        None,
        "cat LICENSE",
    ]
    assert [t.exit_code for t in license_turn.tool_events] == [0, None, 0]
    assert license_turn.project_key == "neubig/pr-viewer" and license_turn.workspace == "/workspace"
    assert license_turn.user_message == "Add MIT license\n\nWe can license this repo under the MIT license."
    assert license_turn.harness_meta.session_id == "neubig/pr-viewer#5"
    assert license_turn.ts == (FIXTURES / "openhands/resolver_mock_output/output.jsonl").stat().st_mtime
    assert len(dark_mode.tool_events) == 21
    edits = [t for t in dark_mode.tool_events if t.input.get("path")]
    assert [t.input["path"].rsplit("/", 1)[1] for t in edits] == ["App.css"] + ["App.tsx"] * 8 + [
        "PullRequestViewer.tsx"
    ] * 6
    assert [t.ok for t in edits] == [True] + [False] * 8 + [False, False, False, True, True, True]
    opened = [t for t in dark_mode.tool_events if t.tool == "run_ipython" and "path" not in t.input]
    assert len(opened) == 5 and all(t.input["code"].startswith("open_file(") for t in opened)
    assert dark_mode.event_id != license_turn.event_id


def test_event_list_unpacks_the_editor_call_and_drops_a_running_exit_code() -> None:
    event = load("openhands/runtime_trajs/basic_gui_mode.json").events[0]
    assert [t.tool for t in event.tool_events] == ["run", "edit", "edit", "run"]
    mkdir, index, app, serve = event.tool_events
    assert (
        mkdir.input == {"command": "mkdir -p /workspace/todo-app"}
        and mkdir.exit_code == 0
        and mkdir.ok is True
    )
    assert index.input["command"] == "create" and index.input["path"] == "/workspace/todo-app/index.html"
    assert index.input["file_text"].startswith("<!DOCTYPE html>")
    assert "translated_ipython_code" not in index.input
    assert index.diff is not None and index.diff.startswith("--- /workspace/todo-app/index.html")
    assert app.input["path"] == "/workspace/todo-app/app.js"
    assert serve.exit_code is None and serve.ok is False  # exit code -1: the server was still running
    assert event.user_message.startswith("I want to create a VueJS app")
    assert event.workspace == "/workspace" and event.project_key == "/workspace"


def test_event_list_with_one_edit() -> None:
    event = load("openhands/runtime_trajs/basic.json").events[0]
    assert len(event.tool_events) == 1
    edit = event.tool_events[0]
    assert (edit.tool, edit.input["command"], edit.input["path"]) == (
        "edit",
        "create",
        "/workspace/game_2048.py",
    )
    assert edit.ok is True
    assert event.harness_meta.stop_reason == "finish"


def test_event_list_splits_turns_per_user_message_and_keeps_errors() -> None:
    events = [
        {
            "id": 0,
            "timestamp": "2025-01-01T10:00:00",
            "source": "user",
            "action": "message",
            "args": {"content": "first"},
        },
        {
            "id": 1,
            "timestamp": "2025-01-01T10:00:05",
            "source": "agent",
            "action": "run",
            "args": {"command": "pytest -q", "thought": "test it"},
        },
        {
            "id": 2,
            "timestamp": "2025-01-01T10:00:09",
            "source": "agent",
            "observation": "run",
            "cause": 1,
            "content": "1 failed",
            "extras": {"metadata": {"exit_code": 1, "working_dir": "/repo"}},
        },
        {
            "id": 3,
            "timestamp": "2025-01-01T10:01:00",
            "source": "user",
            "action": "message",
            "args": {"content": "second"},
        },
        {
            "id": 4,
            "timestamp": "2025-01-01T10:01:02",
            "source": "agent",
            "observation": "error",
            "content": "bad tool call",
        },
    ]
    first, second = parse(orjson.dumps(events), source="x.json", owner="o")
    assert (first.user_message, second.user_message) == ("first", "second")
    assert first.tool_events[0].exit_code == 1 and first.round_texts == ["test it"]
    assert first.workspace == "/repo" and first.project_key == "/repo"
    assert first.ts == 1735725609.0 and second.ts == 1735725662.0
    assert second.tool_events[0].tool == "error" and second.tool_events[0].ok is False
    assert [first.harness_meta.turn, second.harness_meta.turn] == [0, 1]


def test_editor_call_literals_that_are_not_json_are_left_out() -> None:
    """``translated_ipython_code`` is Python: bytes, sets and complex numbers are not coerced into JSON."""
    call = "{'command': 'create', 'path': '/a', 'file_text': b'x', 'tags': {1}, 'line': 1+2j}"
    code = f"print(file_editor(**{call}))"
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "make a"}},
        {
            "id": 1,
            "source": "agent",
            "action": "edit",
            "args": {"path": "/a", "translated_ipython_code": code},
        },
    ]
    (event,) = parse(orjson.dumps(events), source="s.json", owner="o")
    assert event.tool_events[0].input == {"path": "/a", "command": "create"}
    assert len(event.to_wire()) > 0
