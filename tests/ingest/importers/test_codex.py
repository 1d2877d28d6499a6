"""Codex CLI rollouts: one event per prompt; shell calls, apply_patch, exit codes in both output forms."""

from __future__ import annotations

import orjson
import pytest

from ingest.importers import PartialLog
from ingest.importers.codex import parse
from tests.ingest.importers.support import load

HANDWRITTEN = "codex/handwritten/rollout-2025-09-20T08-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"


def test_real_answer_only_session() -> None:
    result = load("codex/plangate_sample_rollout.jsonl")
    assert result.format == "codex"
    (event,) = result.events
    assert event.user_message == "respond with only the literal string CODEX_OK if you can read this"
    assert event.tool_events == [] and event.round_texts == ["CODEX_OK"]
    assert event.project_key == "/Users/user/Documents/GitHub/notionnext-blog"
    meta = event.harness_meta
    assert (meta.model, meta.session_id, meta.stop_reason) == (
        "gpt-5.3-codex",
        "019de017-e301-71a1-8b82-32e183204794",
        "completed",
    )
    assert meta.commit == "a6e093e18ae5b94122ac15b59d52e7d23b56d0d3"
    assert event.ts == 1777581161.678  # 2026-04-30T20:32:41.678Z, the task_complete record


def test_handwritten_session_two_prompts() -> None:
    first, second = load(HANDWRITTEN).events
    assert first.user_message.startswith("slugify('Ünïcode Straße') returns 'ncode-strae'")
    assert [t.tool for t in first.tool_events] == ["shell", "shell", "apply_patch", "shell"]
    failing, read, patch, passing = first.tool_events
    assert failing.input["command"] == ["bash", "-lc", "python -m pytest -q tests/test_slugify.py"]
    assert failing.exit_code == 1 and "1 failed, 1 passed" in failing.output
    assert not failing.output.startswith("{")  # the JSON wrapper is unpacked
    assert read.exit_code == 0 and read.output.startswith("import re\n")
    assert patch.input["input"].startswith("*** Begin Patch\n*** Update File: slugify/core.py\n")
    assert (patch.exit_code, patch.ok) == (0, True)  # metadata.exit_code and patch_apply_end.success
    assert passing.exit_code == 0 and "2 passed" in passing.output
    assert first.harness_meta.stop_reason == "completed"
    assert len(first.round_texts) == 2  # reasoning summaries are not kept
    assert second.user_message == "add a test for the capital ẞ and run the whole suite"
    grep, add, suite = second.tool_events
    assert (grep.tool, grep.input["cmd"], grep.exit_code) == ("exec_command", "rg -n 'def test_' tests", 0)
    assert grep.output.startswith("tests/test_slugify.py:4:def test_ascii():")
    assert add.tool == "apply_patch" and "*** Add File: tests/test_capital_sharp_s.py" in add.input["input"]
    assert add.exit_code == 0 and add.output.startswith("Success. Updated the following files:")
    assert (suite.tool, suite.input["command"], suite.exit_code) == (
        "shell_command",
        "python -m pytest -q",
        1,
    )
    assert second.harness_meta.stop_reason == "aborted: interrupted"
    for event in (first, second):
        assert event.project_key == event.workspace == "/home/dev/src/slugify"
        assert event.harness_meta.model == "gpt-5-codex"
        assert event.harness_meta.commit == "3f2c9d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"


def test_older_rollout_without_envelopes() -> None:
    lines = [
        {
            "id": "sess-1",
            "timestamp": "2025-05-01T10:00:00.000Z",
            "instructions": None,
            "git": {"commit_hash": "abc1234"},
        },
        {"record_type": "state"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>\n</environment_context>"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the lint"}]},
        {
            "type": "local_shell_call",
            "call_id": "c1",
            "status": "completed",
            "action": {"type": "exec", "command": ["bash", "-lc", "ruff check ."], "working_directory": "/p"},
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"output":"All checks passed!\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}',
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Clean."}]},
    ]
    data = b"\n".join(orjson.dumps(x) for x in lines) + b"\n{truncated"
    with pytest.raises(PartialLog, match="line 8: not valid JSON") as torn:  # a torn last line
        parse(data, source="old.jsonl", owner="o")
    (event,) = torn.value.events  # the good lines still come back
    assert event.user_message == "fix the lint"
    (call,) = event.tool_events
    assert (call.tool, call.input["command"], call.exit_code, call.output) == (
        "local_shell",
        ["bash", "-lc", "ruff check ."],
        0,
        "All checks passed!\n",
    )
    assert event.harness_meta.session_id == "sess-1" and event.harness_meta.commit == "abc1234"
