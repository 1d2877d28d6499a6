"""The notes prompt block: ceiling, most recent first, stale marking (empty vs non-empty set), budget."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import estimate_tokens
from store.notes import MalformedNoteLine, MemoryFile, Note, parse_memory, render_notes, stale_flags
from store.notes.render import BODY_CHARS, HEADING, NOTE_STALE_MARK

HEAD = "1" * 40
GONE = "2" * 40


def _notes(count: int, **fields: object) -> tuple[Note, ...]:
    return tuple(
        Note(kind="gotcha", subject=f"note-{i:02d}", line=i + 1, **fields)  # type: ignore[arg-type]
        for i in range(count)
    )


def _subjects(block: str) -> list[str]:
    return [line.split(": ", 1)[1].split(" ")[0] for line in block.split("\n") if line.startswith("- ")]


def test_nothing_to_say_is_the_empty_string() -> None:
    assert render_notes(MemoryFile()) == ""
    assert render_notes(parse_memory("# just a title\n")) == ""


def test_most_recent_first_with_the_heading_saying_who_wrote_them() -> None:
    block = render_notes(MemoryFile(notes=_notes(3)))
    assert block.split("\n")[0] == HEADING
    assert "written by people" in HEADING and ".fixmem/memory.md" in HEADING
    assert _subjects(block) == ["note-02", "note-01", "note-00"]
    assert "not shown" not in block and "could not be read" not in block


@pytest.mark.parametrize(
    ("count", "ceiling", "shown", "footer"),
    [
        (40, 40, 40, None),
        (41, 40, 40, "(1 older note not shown)"),
        (45, 40, 40, "(5 older notes not shown)"),
        (5, 3, 3, "(2 older notes not shown)"),
        (5, 0, 0, "(5 notes not shown)"),
        (0, 40, 0, None),
    ],
)
def test_the_ceiling_cuts_the_oldest(count: int, ceiling: int, shown: int, footer: str | None) -> None:
    memory = MemoryFile(notes=_notes(count), malformed=(MalformedNoteLine(99, "## x", "bad"),))
    block = render_notes(memory, ceiling=ceiling)
    subjects = _subjects(block)
    assert subjects == [f"note-{i:02d}" for i in range(count - 1, count - 1 - shown, -1)]
    if footer is None:
        assert "not shown" not in block
    else:
        assert footer in block.split("\n")
    assert block.split("\n")[-1] == "(1 block in the memory file could not be read)"


def test_the_default_ceiling_is_40() -> None:
    block = render_notes(MemoryFile(notes=_notes(50)))
    assert len(_subjects(block)) == 40
    assert "(10 older notes not shown)" in block


@pytest.mark.parametrize(
    ("commit", "known", "stale"),
    [
        (GONE, {HEAD}, True),  # not in a non-empty set: marked
        (HEAD, {HEAD}, False),
        (HEAD[:7], {HEAD}, False),  # an abbreviation of a known commit
        (GONE[:7], {HEAD}, True),
        (GONE, set(), False),  # empty set: nothing was checked, nothing is marked
        (None, {HEAD}, False),  # no provenance: nothing to check
        (None, set(), False),
    ],
)
def test_stale_marking_with_an_empty_vs_non_empty_commit_set(
    commit: str | None, known: set[str], stale: bool
) -> None:
    note = Note(kind="decision", subject="use orjson", commit=commit, learned=date(2026, 8, 1), line=1)
    assert stale_flags([note], known) == [stale]
    block = render_notes(MemoryFile(notes=(note,)), known_commits=known)
    assert "use orjson" in block  # marked, never dropped
    assert (NOTE_STALE_MARK in block) is stale


def test_stale_marking_is_per_note() -> None:
    text = (
        f"## gotcha: old\n<!-- learned 2026-01-01 · commit {GONE[:7]} -->\n\n"
        f"## gotcha: current\n<!-- learned 2026-08-18 · commit {HEAD[:12]} -->\n\nbody\n"
        "## gotcha: handwritten\n"
    )
    lines = render_notes(parse_memory(text), known_commits={HEAD, "3" * 40}).split("\n")
    assert lines[1] == "- gotcha: handwritten"
    assert lines[2] == "- gotcha: current (learned 2026-08-18)"
    assert lines[3] == "  body"
    assert lines[4] == f"- gotcha: old (learned 2026-01-01) {NOTE_STALE_MARK}"


def test_unreadable_blocks_are_counted_even_without_notes() -> None:
    memory = parse_memory("## diary: a\n## gotcha:\n## gotcha: fine\n<!-- learned nope -->\n")
    block = render_notes(memory)
    assert block.split("\n")[-1] == "(2 blocks in the memory file could not be read)"
    only_bad = render_notes(parse_memory("## diary: a\n"))
    assert only_bad == f"{HEADING}\n(1 block in the memory file could not be read)"


def test_a_long_body_is_clipped_in_the_prompt_only() -> None:
    note = Note(kind="gotcha", subject="trace", body="x" * (BODY_CHARS * 3), line=1)
    block = render_notes(MemoryFile(notes=(note,)))
    assert "x" * BODY_CHARS in block and "x" * (BODY_CHARS + 1) not in block
    assert "the rest is in .fixmem/memory.md" in block


def test_the_budget_drops_the_oldest_notes_first() -> None:
    memory = MemoryFile(notes=_notes(30, body="some body text " * 4))
    full = render_notes(memory)
    budget = estimate_tokens(full) // 3
    block = render_notes(memory, budget_tokens=budget)
    assert estimate_tokens(block) <= budget
    subjects = _subjects(block)
    assert 0 < len(subjects) < 30
    assert subjects == [f"note-{i:02d}" for i in range(29, 29 - len(subjects), -1)]
    assert f"({30 - len(subjects)} older notes not shown)" in block


def test_a_budget_too_small_for_the_heading_gives_nothing() -> None:
    assert render_notes(MemoryFile(notes=_notes(3)), budget_tokens=5) == ""
    assert render_notes(MemoryFile(notes=_notes(3)), budget_tokens=0) == ""


@pytest.mark.parametrize(("ceiling", "budget"), [(-1, None), (40, -1)])
def test_negative_limits_are_refused(ceiling: int, budget: int | None) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        render_notes(MemoryFile(notes=_notes(1)), ceiling=ceiling, budget_tokens=budget)


@given(
    count=st.integers(0, 60),
    ceiling=st.integers(0, 50),
    budget=st.none() | st.integers(0, 2000),
    body=st.text(max_size=200),
    bad=st.integers(0, 3),
)
def test_the_block_never_exceeds_the_budget_and_never_reorders(
    count: int, ceiling: int, budget: int | None, body: str, bad: int
) -> None:
    memory = MemoryFile(
        notes=_notes(count, body=body.replace("\n", " ").strip()),
        malformed=tuple(MalformedNoteLine(i, "## x", "bad") for i in range(bad)),
    )
    block = render_notes(memory, ceiling=ceiling, budget_tokens=budget)
    if budget is not None:
        assert estimate_tokens(block) <= budget
    subjects = _subjects(block)
    assert len(subjects) <= min(count, ceiling)
    assert subjects == [f"note-{i:02d}" for i in range(count - 1, count - 1 - len(subjects), -1)]
    hidden = count - len(subjects)
    if block and hidden:
        assert f"{hidden} " in block and "not shown" in block
