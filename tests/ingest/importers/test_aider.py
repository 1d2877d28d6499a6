"""Aider chat transcripts: one event per ``####`` request, SEARCH/REPLACE edits, ``/run`` output."""

from __future__ import annotations

from ingest.importers.aider import parse
from tests.ingest.importers.support import FIXTURES, load


def test_add_test_transcript() -> None:
    result = load("aider/add-test.md")
    assert result.format == "aider"
    first, second, third = result.events
    assert first.user_message.startswith("add a test for cmd_add that passes in 'foo.txt' and 'bar.txt'")
    (edit,) = first.tool_events
    assert edit.tool == "edit" and edit.input["path"] == "tests/test_commands.py"
    assert edit.input["old_str"] == "" and edit.input["new_str"].startswith("import os\nimport tempfile\n")
    assert edit.ok is True  # "> Applied edit to tests/test_commands.py"
    assert first.harness_meta.commit == first.harness_meta.commit_end == "e2d5212"
    assert second.user_message == "/run pytest tests/test_commands.py"
    run, fix = second.tool_events
    assert run.tool == "run" and run.input == {"command": "pytest tests/test_commands.py", "slash": "/run"}
    assert (
        run.output.splitlines()[-1]
        == "============================== 1 failed in 0.34s ==============================="
    )
    assert "E       AttributeError: 'list' object has no attribute 'split'" in run.output
    assert "Add the output to the chat" not in run.output and "```" not in run.output
    assert run.exit_code is None and run.ok is None  # aider never writes an exit status
    assert (
        fix.input["path"] == "tests/test_commands.py"
        and 'commands.cmd_add("foo.txt bar.txt")' in fix.input["new_str"]
    )
    assert second.harness_meta.commit == "d1551b4"
    assert second.round_texts[0].startswith("It seems that the `cmd_add` method")
    assert "<<<<<<<" not in second.round_texts[0] and "```python" not in second.round_texts[0]
    assert second.round_texts[0].endswith(
        "Now, run the test again with the updated test method:\n\n```\npytest tests/test_commands.py\n```"
    )
    assert [t.tool for t in third.tool_events] == ["run"]
    assert "1 passed in 0.38s" in third.tool_events[0].output
    assert third.round_texts == [] and third.harness_meta.commit is None
    mtime = (FIXTURES / "aider/add-test.md").stat().st_mtime  # no times in the log: the file's, in order
    assert [e.ts for e in result.events] == [mtime - 2, mtime - 1, mtime]
    assert {e.workspace for e in result.events} == {(FIXTURES / "aider").resolve().as_posix()}
    assert {e.project_key for e in result.events} == {(FIXTURES / "aider").resolve().as_posix()}


def test_no_color_transcript_two_blocks_one_file() -> None:
    first, second, third = load("aider/no-color.md", project="aider").events
    assert [(t.tool, t.input["path"], t.ok) for t in first.tool_events] == [("edit", "aider/io.py", True)] * 2
    assert first.tool_events[0].input == {
        "path": "aider/io.py",
        "old_str": "import os",
        "new_str": "import os\nimport os.path",
    }
    assert first.harness_meta.commit == "3218242"
    assert second.user_message == "add a test"
    assert [(t.input["path"], t.ok) for t in second.tool_events] == [("tests/test_io.py", True)]
    assert second.harness_meta.commit == "52a9df5"
    assert third.user_message == "/run pytest"
    assert "25 passed in 1.41s" in third.tool_events[0].output
    assert {e.project_key for e in (first, second, third)} == {"aider"}


def test_chat_history_file_sessions_times_and_failed_edits() -> None:
    history = "\n".join(
        [
            "# aider chat started at 2024-08-05 19:33:02",
            "",
            "> Added src/app.py to the chat.",
            "",
            "#### make the greeting",
            "#### say hello world",
            "",
            "src/app.py",
            "```python",
            "<<<<<<< SEARCH",
            "print('hi')",
            "=======",
            "print('hello world')",
            ">>>>>>> REPLACE",
            "```",
            "",
            "> The LLM did not conform to the edit format.",
            "> SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in src/app.py",
            "",
            "#### /test pytest -q",
            "",
            "> 1 failed in 0.1s",
            "> Add command output to the chat? (Y)es/(N)o [Yes]: n",
            "",
            "#### /undo",
            "> Removed: 1a2b3c4 aider: greeting",
            "",
            "# aider chat started at 2024-08-06 08:00:00",
            "",
            "#### /ask what does main do?",
            "",
            "It prints a greeting.",
        ]
    ).encode()
    events = parse(history, source="repo/.aider.chat.history.md", owner="o", workspace="/repo")
    assert [e.user_message for e in events] == [
        "make the greeting\nsay hello world",
        "/test pytest -q",
        "/undo",
        "what does main do?",
    ]
    (edit,) = events[0].tool_events
    assert edit.input == {"path": "src/app.py", "old_str": "print('hi')", "new_str": "print('hello world')"}
    assert edit.ok is False
    assert events[1].tool_events[0].input == {"command": "pytest -q", "slash": "/test"}
    assert events[1].tool_events[0].output == "1 failed in 0.1s"
    assert events[2].tool_events[0].tool == "/undo"
    assert events[3].tool_events == [] and events[3].round_texts == ["It prints a greeting."]
    assert [e.ts for e in events] == [1722886382.0, 1722886383.0, 1722886384.0, 1722931200.0]
    assert {e.project_key for e in events} == {"/repo"}
