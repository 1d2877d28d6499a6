"""The ``notes check`` report and the promote command line: values in, values out."""

from __future__ import annotations

import shlex
from datetime import date
from pathlib import Path

import pytest

from store.notes import MalformedNoteLine, MemoryFile, Note
from store.notes.check import check_json, check_notes, check_text
from store.notes.promote import promote_command

PATH = Path("/ws/.fixmem/memory.md")


def _memory(
    count: int, commit: str | None = None, malformed: tuple[MalformedNoteLine, ...] = ()
) -> MemoryFile:
    notes = tuple(
        Note(kind="gotcha", subject=f"n{i}", commit=commit, learned=date(2026, 1, 1), line=i + 1)
        for i in range(count)
    )
    return MemoryFile(notes=notes, malformed=malformed)


@pytest.mark.parametrize(("count", "ceiling", "shown"), [(0, 3, 0), (2, 3, 2), (5, 3, 3), (5, 0, 0)])
def test_the_newest_notes_within_the_ceiling_are_shown(count: int, ceiling: int, shown: int) -> None:
    rows = check_notes(_memory(count), frozenset(), ceiling)
    assert [r.shown for r in rows] == [False] * (count - shown) + [True] * shown


def test_a_note_whose_commit_is_gone_is_stale_and_reported() -> None:
    memory = _memory(1, commit="abc1234")
    rows = check_notes(memory, frozenset({"def5678" + "0" * 33}), 40)
    assert [r.stale for r in rows] == [True]
    lines = check_text(PATH, memory, rows, 40, checked=True)
    assert any(line.startswith(f"stale: {PATH}:1: n0: commit abc1234") for line, _ in lines)
    assert check_json(PATH, memory, rows, 40, checked=True)["notes"][0]["stale"] is True


def test_malformed_lines_go_to_stderr_and_no_file_says_so() -> None:
    memory = _memory(0, malformed=(MalformedNoteLine(3, "## ???", "no kind", True),))
    lines = check_text(PATH, memory, [], 40, checked=False)
    assert [err for _, err in lines] == [False, False, True]
    assert "commits not checked" in lines[1][0] and "block not read" in lines[2][0]
    assert check_text(PATH, None, [], 40, checked=False) == [
        (f"no memory file at {PATH} (add one with: fixmem notes add)", False)
    ]


def test_the_promote_command_quotes_what_it_names() -> None:
    command = promote_command(
        "fix-1", "gotcha", project="acme/a b", owner="o'brien", data_dir="/d d", workspace=None
    )
    assert shlex.split(command) == [
        "fixmem", "notes", "promote", "fix-1", "--kind", "gotcha", "--project", "acme/a b",
        "--owner", "o'brien", "--data-dir", "/d d",
    ]  # fmt: skip
