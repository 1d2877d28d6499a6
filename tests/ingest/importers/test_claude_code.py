"""Claude Code sessions: one event per prompt, split responses merged, subagent sidechains attached."""

from __future__ import annotations

import orjson

from ingest.importers.claude_code import parse
from tests.ingest.importers.support import FIXTURES, load

SESSION = "claude-code/-home-dev-src-invoicer/5f0c7a52-3d3e-4b8e-9a51-0d2f6c1e9b47.jsonl"
ROOT = "/home/dev/src/invoicer"


def test_three_prompts_become_three_events_and_the_local_command_none() -> None:
    result = load(SESSION)
    assert result.format == "claude-code"
    assert result.notes == ("attached subagent log agent-a1b2c3d4.jsonl",)
    assert [e.user_message for e in result.events] == [
        "tests/test_totals.py::test_discount_zero_quantity fails with ZeroDivisionError, please fix it",
        "Also check the other modules for the same division bug, and add a CHANGELOG entry.",
        "run the linter too",
    ]
    assert [e.harness_meta.turn for e in result.events] == [0, 1, 2]
    assert {e.project_key for e in result.events} == {ROOT} and {e.workspace for e in result.events} == {ROOT}
    assert {e.harness_meta.session_id for e in result.events} == {"5f0c7a52-3d3e-4b8e-9a51-0d2f6c1e9b47"}
    assert {e.harness_meta.model for e in result.events} == {"claude-sonnet-4-5-20250929"}


def test_first_turn_tools_exit_codes_and_edit_diff() -> None:
    event = load(SESSION).events[0]
    assert [t.tool for t in event.tool_events] == ["Bash", "Read", "Edit", "Bash"]
    failing, read, edit, passing = event.tool_events
    assert failing.input["command"] == "python -m pytest tests/test_totals.py -q"
    assert (failing.exit_code, failing.ok) == (1, False)
    assert "ZeroDivisionError: float division by zero" in failing.output
    assert read.input == {"file_path": f"{ROOT}/invoicer/totals.py"} and read.ok is True
    assert edit.input["file_path"] == f"{ROOT}/invoicer/totals.py"
    assert edit.input["old_string"] == "    per_item = total / quantity\n"
    assert edit.ok is True and edit.diff is not None
    assert edit.diff.splitlines()[:3] == [
        f"--- {ROOT}/invoicer/totals.py",
        f"+++ {ROOT}/invoicer/totals.py",
        "@@ -12,4 +12,6 @@",
    ]
    assert "+    if quantity == 0:" in edit.diff.splitlines()
    assert (passing.exit_code, passing.ok, passing.output) == (None, True, "...\n3 passed in 0.03s")
    # the first response was split over two records sharing message.id: both blocks are kept, once
    assert event.round_texts[0] == "I'll run the failing test first to see the error."
    assert len(event.round_texts) == 3
    assert event.harness_meta.stop_reason == "end_turn"
    assert event.ts == 1748942084.0  # 2025-06-03T09:14:44Z, the turn's last assistant record
    assert failing.ts == 1748942057.0


def test_subagent_work_follows_the_task_call_in_its_turn() -> None:
    event = load(SESSION).events[1]
    assert [t.tool for t in event.tool_events] == [
        "Task",
        "Grep",
        "Edit",
        "Write",
        "MultiEdit",
        "Bash",
        "Bash",
    ]
    task, grep, edit, write, multi, missing, rerun = event.tool_events
    assert task.input["subagent_type"] == "general-purpose"
    assert grep.model_extra == {"subagent": "a1b2c3d4"} and edit.model_extra == {"subagent": "a1b2c3d4"}
    assert task.model_extra == {}
    assert edit.input["file_path"] == f"{ROOT}/invoicer/tax.py" and edit.ok is True
    assert edit.diff is not None and "+        return 0.0" in edit.diff
    assert write.input["file_path"] == f"{ROOT}/CHANGELOG.md"
    assert write.diff is not None and write.diff.startswith(
        f"--- /dev/null\n+++ {ROOT}/CHANGELOG.md\n@@ -0,0 +1,5 @@"
    )
    assert multi.ok is False and multi.exit_code is None and "String to replace not found" in multi.output
    assert (missing.input["command"], missing.exit_code, missing.ok) == ("pytest -q", 127, False)
    assert (rerun.input["command"], rerun.exit_code, rerun.ok) == ("python -m pytest -q", None, True)
    assert event.round_texts == [
        "Done: the subagent fixed `tax_per_item` in invoicer/tax.py, I added CHANGELOG.md, "
        "and all 7 tests pass. README.md had no sentence to update."
    ]


def test_interrupted_turn() -> None:
    event = load(SESSION).events[2]
    assert [(t.tool, t.input["command"], t.ok) for t in event.tool_events] == [
        ("Bash", "ruff check .", False)
    ]
    assert event.harness_meta.stop_reason == "interrupted"


def test_the_subagent_file_alone_yields_nothing_and_says_why() -> None:
    result = load("claude-code/-home-dev-src-invoicer/agent-a1b2c3d4.jsonl")
    assert result.format == "claude-code" and result.events == []
    assert result.notes == ("claude-code subagent log: imported with its parent session",)


def test_without_its_sidechain_file_the_session_still_imports() -> None:
    events = parse((FIXTURES / SESSION).read_bytes(), source="s.jsonl", owner="o")
    assert [t.tool for t in events[1].tool_events] == ["Task", "Write", "MultiEdit", "Bash", "Bash"]


def record(kind: str, uuid: str, content: object, **extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "type": kind,
        "uuid": uuid,
        "sessionId": "s1",
        "cwd": "/w",
        "isSidechain": False,
    }
    base["message"] = {"role": kind, "content": content, **extra.pop("message", {})}  # type: ignore[dict-item]
    base.update(extra)
    return base


def test_duplicate_blocks_inline_sidechains_and_meta_records() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}}
    rows = [
        record("user", "u1", "fix the build", timestamp="2025-01-01T00:00:00Z"),
        record("assistant", "a1", [use], message={"id": "m1"}, timestamp="2025-01-01T00:00:01Z"),
        record(
            "assistant", "a2", [use], message={"id": "m1"}, timestamp="2025-01-01T00:00:01Z"
        ),  # logged twice
        record(
            "user",
            "s0",
            "look for callers",
            isSidechain=True,
            parentUuid=None,
            timestamp="2025-01-01T00:00:02Z",
        ),
        record(
            "assistant",
            "s1",
            [{"type": "tool_use", "id": "t9", "name": "Grep", "input": {"pattern": "x"}}],
            message={"id": "m9"},
            isSidechain=True,
            timestamp="2025-01-01T00:00:03Z",
        ),
        record(
            "user",
            "u2",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "Exit code 2\nmake: *** [test] Error 2",
                    "is_error": True,
                }
            ],
            timestamp="2025-01-01T00:00:04Z",
        ),
        record("user", "u3", "Caveat: local commands below", isMeta=True),
    ]
    data = b"\n".join(orjson.dumps(r) for r in rows)
    (event,) = parse(data, source="s.jsonl", owner="o", project="override")
    assert [t.tool for t in event.tool_events] == ["Bash", "Grep"]
    assert event.tool_events[0].exit_code == 2 and event.tool_events[0].ok is False
    assert event.tool_events[1].model_extra is not None and event.tool_events[1].model_extra[
        "subagent"
    ].startswith("sidechain-")
    assert event.project_key == "override" and event.workspace == "/w"
    assert event.ts == 1735689604.0
