"""The memory-file grammar: every malformed form reported with its line, provenance optional, round trip."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

from store.notes import (
    KINDS,
    MalformedNoteLine,
    MemoryFile,
    Note,
    NoteRejected,
    append_separator,
    format_note,
    new_note,
    parse_memory,
)

GOOD = "## gotcha: make test needs go generate first"


def test_a_missing_or_empty_file_is_silent() -> None:
    assert parse_memory("") == MemoryFile()
    assert parse_memory("\n\n") == MemoryFile()
    assert parse_memory("# Project memory\n\nSome introduction.\n") == MemoryFile()


def test_a_full_note_with_provenance() -> None:
    text = f"{GOOD}\n<!-- learned 2026-08-18 · commit ABC1234 -->\n\nthe generated files go stale.\n"
    assert parse_memory(text) == MemoryFile(
        notes=(
            Note(
                kind="gotcha",
                subject="make test needs go generate first",
                body="the generated files go stale.",
                learned=date(2026, 8, 18),
                commit="abc1234",
                line=1,
            ),
        )
    )


@pytest.mark.parametrize(
    ("provenance", "learned", "commit"),
    [
        ("", None, None),  # a hand-written note with no provenance is still a note
        ("<!-- learned 2026-08-18 -->", date(2026, 8, 18), None),
        ("<!-- commit deadbeef -->", None, "deadbeef"),
        ("<!-- commit deadbeef · learned 2026-01-02 -->", date(2026, 1, 2), "deadbeef"),
        ("<!--learned 2026-08-18, commit abc1234-->", date(2026, 8, 18), "abc1234"),
        ("\n\n<!-- learned 2026-08-18 · commit abc1234 -->", date(2026, 8, 18), "abc1234"),
        ("<!-- learned 2026-08-18 · commit " + "a" * 40 + " -->", date(2026, 8, 18), "a" * 40),
    ],
)
def test_provenance_is_optional_and_read_in_any_order(
    provenance: str, learned: date | None, commit: str | None
) -> None:
    memory = parse_memory(f"{GOOD}\n{provenance}\nbody\n")
    assert memory.malformed == ()
    assert memory.notes[0].learned == learned
    assert memory.notes[0].commit == commit
    assert memory.notes[0].body == "body"


def test_a_comment_that_is_not_provenance_is_body() -> None:
    memory = parse_memory(f"{GOOD}\n<!-- TODO: check on arm64 -->\nbody\n")
    assert memory.notes[0].body == "<!-- TODO: check on arm64 -->\nbody"
    assert memory.notes[0].learned is None


def test_provenance_only_right_after_the_header() -> None:
    memory = parse_memory(f"{GOOD}\nfirst body line\n<!-- learned 2026-08-18 -->\n")
    assert memory.notes[0].learned is None
    assert memory.notes[0].body == "first body line\n<!-- learned 2026-08-18 -->"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("## diary: what I did today", "'diary' is not a kind of note; the kinds are gotcha, decision"),
        ("## gotchas: plural", "'gotchas' is not a kind of note"),
        ("## gotcha:", "no subject after 'gotcha:'"),
        ("## gotcha:    ", "no subject after 'gotcha:'"),
        ("## : a subject and no kind", "no kind before ':'"),
        ("## gotcha make test", "no ':' after the kind"),
        ("## Notes", "no ':' after the kind"),
        ("##", "'##' must be followed by a space"),
        ("## ", "no ':' after the kind"),
        ("##gotcha: no space", "'##' must be followed by a space"),
        ("  ## gotcha: indented", "a header starts at the beginning of the line"),
        ("\t## decision: tab", "a header starts at the beginning of the line"),
        ("## gotcha x: two words", "'gotcha x' is not a kind of note"),
    ],
)
def test_every_malformed_header_is_reported_with_its_line(line: str, reason: str) -> None:
    text = f"# title\n{GOOD}\nbody one\n{line}\nbody of the bad block\n## decision: later\nbody two\n"
    memory = parse_memory(text)
    assert len(memory.malformed) == 1
    bad = memory.malformed[0]
    assert (bad.line, bad.text, bad.lost_block) == (4, line, True)
    assert reason in bad.reason
    assert memory.unreadable_blocks == 1
    # Neither fatal nor leaky: the notes around it are read, and the bad block's body goes nowhere.
    assert [(n.subject, n.body, n.line) for n in memory.notes] == [
        ("make test needs go generate first", "body one", 2),
        ("later", "body two", 6),
    ]


@pytest.mark.parametrize(
    ("comment", "reason", "learned", "commit"),
    [
        ("<!-- learned yesterday · commit abc1234 -->", "cannot read 'learned yesterday'", None, "abc1234"),
        ("<!-- learned 2026-02-30 -->", "'2026-02-30' is not a date", None, None),
        ("<!-- learned 2026-08-18 · commit xyz -->", "cannot read 'commit xyz'", date(2026, 8, 18), None),
        ("<!-- learned 2026-08-18 · by alice -->", "cannot read 'by alice'", date(2026, 8, 18), None),
        ("<!-- learned 2026-08-18", "not closed with '-->'", None, None),
    ],
)
def test_a_bad_provenance_is_reported_and_the_note_kept(
    comment: str, reason: str, learned: date | None, commit: str | None
) -> None:
    memory = parse_memory(f"intro\n{GOOD}\n{comment}\nbody\n")
    assert [(m.line, m.text, m.lost_block) for m in memory.malformed] == [(3, comment, False)]
    assert reason in memory.malformed[0].reason
    assert "expected <!-- learned YYYY-MM-DD · commit <hex> -->" in memory.malformed[0].reason
    assert memory.unreadable_blocks == 0
    assert [(n.subject, n.learned, n.commit, n.body) for n in memory.notes] == [
        ("make test needs go generate first", learned, commit, "body")
    ]


def test_kinds_are_closed_and_case_insensitive() -> None:
    memory = parse_memory("## Gotcha: a\n## DECISION: b\n## convention: c\n## Warning: d\n")
    assert [n.kind for n in memory.notes] == ["gotcha", "decision", "convention"]
    assert [m.line for m in memory.malformed] == [4]


def test_deeper_headings_and_crlf_are_body() -> None:
    memory = parse_memory("\ufeff## gotcha: a\r\n### details\r\nmore\r\n")
    assert memory.notes == (Note(kind="gotcha", subject="a", body="### details\nmore", line=1),)


def test_several_malformed_lines_each_keep_their_number() -> None:
    text = "## diary: x\n## gotcha: ok\n<!-- learned nope -->\n\n## decision:\n"
    assert [(m.line, m.lost_block) for m in parse_memory(text).malformed] == [
        (1, True),
        (3, False),
        (5, True),
    ]


@pytest.mark.parametrize(
    ("kind", "subject", "body", "message"),
    [
        ("diary", "x", "", "'diary' is not a kind of note"),
        ("", "x", "", "is not a kind of note"),
        ("gotcha", "", "", "the subject is empty"),
        ("gotcha", "   ", "", "the subject is empty"),
        ("gotcha", "two\nlines", "", "the subject is one line"),
        ("gotcha", "x", "fine\n## decision: sneaky", "body line 2 starts with '##'"),
        ("gotcha", "x", "  ## indented", "body line 1 starts with '##'"),
    ],
)
def test_new_note_refuses_with_a_clear_error(kind: str, subject: str, body: str, message: str) -> None:
    with pytest.raises(NoteRejected, match=re.escape(message)):
        new_note(kind, subject, body, learned=date(2026, 8, 18), commit="abc1234")


def test_new_note_refuses_a_bad_commit_and_a_body_posing_as_provenance() -> None:
    with pytest.raises(NoteRejected, match="not a commit id"):
        new_note("gotcha", "x", learned=None, commit="HEAD")
    with pytest.raises(NoteRejected, match="provenance"):
        new_note("gotcha", "x", "<!-- learned 2026-01-01 -->", learned=None, commit=None)


def test_format_note_writes_the_documented_grammar() -> None:
    note = new_note(
        "Gotcha ",
        " make test needs go generate first ",
        "the generated files go stale.\n",
        learned=date(2026, 8, 18),
        commit="ABC1234",
    )
    assert format_note(note) == (
        "## gotcha: make test needs go generate first\n"
        "<!-- learned 2026-08-18 · commit abc1234 -->\n"
        "\n"
        "the generated files go stale.\n"
    )


@pytest.mark.parametrize(
    ("tail", "separator"),
    [("", ""), ("x", "\n\n"), ("x\n", "\n"), ("x\n\n", ""), ("\n", "\n")],
)
def test_append_separator_leaves_exactly_one_blank_line(tail: str, separator: str) -> None:
    assert append_separator(tail) == separator


_line_text = st.text(st.characters(exclude_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=30)


@st.composite
def valid_notes(draw: st.DrawFn) -> Note:
    kind = draw(st.sampled_from(KINDS))
    subject = draw(_line_text.filter(lambda s: s.strip() != ""))
    body = "\n".join(draw(st.lists(_line_text, max_size=4)))
    learned = draw(st.none() | st.dates(min_value=date(1990, 1, 1), max_value=date(2100, 1, 1)))
    commit = draw(st.none() | st.from_regex(r"\A[0-9a-f]{7,40}\Z"))
    try:
        return new_note(kind, subject, body, learned=learned, commit=commit)
    except NoteRejected:
        reject()


@given(st.lists(valid_notes(), max_size=6), st.sampled_from(["", "# Memory\n", "intro\nmore intro"]))
def test_appended_notes_read_back_unchanged(notes: list[Note], preamble: str) -> None:
    text = preamble
    for note in notes:
        text += append_separator(text) + format_note(note)
    memory = parse_memory(text)
    assert memory.malformed == ()
    assert [(n.kind, n.subject, n.body, n.learned, n.commit) for n in memory.notes] == [
        (n.kind, n.subject, n.body, n.learned, n.commit) for n in notes
    ]
    header_lines = [i for i, line in enumerate(text.split("\n"), start=1) if line.startswith("## ")]
    assert [n.line for n in memory.notes] == header_lines


@given(st.text(max_size=400))
def test_any_text_parses_and_every_header_like_line_is_accounted_for(text: str) -> None:
    memory = parse_memory(text)
    lines = text.removeprefix("\ufeff").split("\n")
    header_like = {i for i, line in enumerate(lines, start=1) if re.match(r"^[ \t]*##(?!#)", line)}
    read = {n.line for n in memory.notes}
    lost = {m.line for m in memory.malformed if m.lost_block}
    assert read | lost == header_like
    assert not read & lost
    assert all(isinstance(m, MalformedNoteLine) and m.reason for m in memory.malformed)
