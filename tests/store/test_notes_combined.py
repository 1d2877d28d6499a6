"""The combined prompt block: person-written notes first and labelled, then learned fixes, one budget."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import FixEntry, Recalled, entry_id, estimate_tokens, prompt_block
from store.notes import MemoryFile, Note, parse_memory, render_notes
from store.notes.render import HEADING, NOTE_STALE_MARK, combined_prompt_block

NOW = 1_800_000_000.0
FIXES_HEADER = "Past fixes in this project:"


def fix(n: int, *, task: str = "", commit: str | None = None, solution: str = "") -> FixEntry:
    return FixEntry(
        id=entry_id("o", "p", f"turn-{n}"),
        ts=NOW - 86_400 * (n + 1),
        project="p",
        task=task or f"fix the login timeout number {n}",
        files=["src/login.py"],
        symbols=[],
        errors=["TimeoutError: login timed out after # seconds"],
        tests=None,
        outcome="fixed",
        solution=solution or "raise the timeout and retry once",
        tags=[],
        commit=commit,
    )


def recalled(entries: Sequence[FixEntry]) -> list[Recalled]:
    return [Recalled(entry=e, score=1.0 - i / 100, regressed=False) for i, e in enumerate(entries)]


def notes(count: int, body: str = "") -> MemoryFile:
    return MemoryFile(
        notes=tuple(Note(kind="gotcha", subject=f"note-{i:02d}", body=body, line=i + 1) for i in range(count))
    )


def test_notes_come_first_and_are_labelled_then_the_learned_fixes() -> None:
    block = combined_prompt_block(notes(2), recalled([fix(1), fix(2)]), 600, now=NOW)
    lines = block.split("\n")
    assert lines[0] == HEADING and "written by people" in lines[0]
    assert lines[1:3] == ["- gotcha: note-01", "- gotcha: note-00"]
    assert lines[3] == ""
    assert lines[4] == FIXES_HEADER
    assert "login timeout number 1" in lines[5] and "login timeout number 2" in lines[6]
    assert estimate_tokens(block) <= 600


def test_without_notes_it_is_the_stores_block_and_without_fixes_the_notes_block() -> None:
    entries = recalled([fix(1)])
    assert combined_prompt_block(None, entries, 600, now=NOW) == prompt_block(entries, 600, now=NOW)
    assert combined_prompt_block(MemoryFile(), entries, 600, now=NOW) == prompt_block(entries, 600, now=NOW)
    only_notes = combined_prompt_block(notes(1), [], 600, now=NOW)
    assert only_notes == f"{HEADING}\n- gotcha: note-00"
    assert combined_prompt_block(None, [], 600, now=NOW) == ""


def test_notes_take_what_they_need_and_fixes_get_the_rest() -> None:
    memory = notes(30, body="a body that costs tokens " * 3)
    block = combined_prompt_block(memory, recalled([fix(i) for i in range(5)]), 600, now=NOW)
    assert estimate_tokens(block) <= 600
    assert block.startswith(HEADING)
    assert "older notes not shown" in block
    # A long memory file does not crowd out the fix recall judged most relevant.
    fixes_part = block.split(FIXES_HEADER, 1)[1]
    assert "login timeout number 0" in fixes_part


def test_the_reserve_for_the_first_fix_is_at_most_half_the_budget() -> None:
    memory = notes(40, body="x" * 200)
    huge = fix(0, task="t " * 400, solution="s " * 400)
    block = combined_prompt_block(memory, recalled([huge]), 300, now=NOW)
    assert estimate_tokens(block) <= 300
    notes_part, fixes_part = block.split(FIXES_HEADER, 1)
    assert notes_part == render_notes(memory, budget_tokens=150) + "\n\n"  # notes keep half the budget
    assert fixes_part.strip()  # the first fix is shortened, not dropped


def test_stale_marks_reach_both_parts() -> None:
    head, gone = "a" * 40, "b" * 40
    memory = parse_memory(
        f"## gotcha: old\n<!-- commit {gone[:7]} -->\n## gotcha: new\n<!-- commit {head} -->\n"
    )
    block = combined_prompt_block(memory, recalled([fix(1, commit=gone)]), 600, known_commits={head}, now=NOW)
    assert f"- gotcha: old {NOTE_STALE_MARK}" in block
    assert "- gotcha: new\n" in block
    assert "stale: commit gone" in block.split(FIXES_HEADER, 1)[1]
    unchecked = combined_prompt_block(memory, recalled([fix(1, commit=gone)]), 600, now=NOW)
    assert NOTE_STALE_MARK not in unchecked and "stale: commit gone" not in unchecked


def test_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        combined_prompt_block(notes(1), [], -1, now=NOW)


@given(
    note_count=st.integers(0, 45),
    body=st.text(max_size=300),
    fix_count=st.integers(0, 6),
    task=st.text(min_size=1, max_size=400),
    budget=st.integers(0, 1500),
    ceiling=st.integers(0, 45),
)
def test_the_combined_block_never_exceeds_the_budget(
    note_count: int, body: str, fix_count: int, task: str, budget: int, ceiling: int
) -> None:
    memory = notes(note_count, body=body.strip().replace("\n##", "\n#"))
    entries = recalled([fix(i, task=task) for i in range(fix_count)])
    block = combined_prompt_block(memory, entries, budget, now=NOW, ceiling=ceiling)
    assert estimate_tokens(block) <= budget
    if HEADING in block and FIXES_HEADER in block:
        assert block.index(HEADING) < block.index(FIXES_HEADER)
