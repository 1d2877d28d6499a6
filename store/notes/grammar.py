"""The memory file's grammar: text in, notes and malformed-line reports out (and back to text).

The whole grammar, shared with ``.dcode/memory.md`` so such a file can be copied in as is::

    ## <kind>: <subject>
    <!-- learned 2026-08-18 · commit abc1234 -->     (optional provenance, either part optional)
    free body lines until the next header

Rules this module obeys:

- Pure: no files, no clock, no git. The caller reads the file, passes today's date and HEAD.
- A missing or empty file is ordinary: no notes, no reports.
- Every line that looks like a header (``##`` not followed by a third ``#``, at any indentation) and is
  not a valid one is reported with its 1-based line number and a reason. Its block (the header and its
  body) is not read, and its body is never attached to the note before it. Nothing is fatal.
- A provenance comment whose parts do not parse is reported too; the note is kept without those parts.
- Lines before the first header (a title, an introduction) are a preamble and are ignored.
- Kinds are a closed list; the kind is matched case-insensitively (``## Gotcha: x`` is a gotcha).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Final, Literal, cast, get_args

from store.notes.errors import NoteRejected

Kind = Literal["gotcha", "decision", "convention"]
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)
KIND_MEANINGS: Final[dict[Kind, str]] = {
    "gotcha": "cost time and will cost it again",
    "decision": "a choice and its reason, so it is not relitigated",
    "convention": "how this repository does something, discovered rather than documented",
}

#: Where a workspace keeps its notes, relative to the workspace. Not configurable on purpose: a
#: configurable path is a memory one machine reads and another does not.
MEMORY_FILE: Final = ".fixmem/memory.md"

_KINDS_SENTENCE = "the kinds are gotcha, decision and convention"
_HEADER_LIKE = re.compile(r"^[ \t]*##(?!#)")
_HEADER = re.compile(r"^## (?P<kind>[^:]*):(?P<subject>.*)$")
_PROVENANCE_LIKE = re.compile(r"^<!--\s*(?:learned|commit)\b", re.IGNORECASE)
_PROVENANCE = re.compile(r"^<!--(?P<inner>.*)-->$")
_PART_SPLIT = re.compile(r"\s*[·,;|]\s*")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMMIT = re.compile(r"^[0-9a-f]{4,64}$")
_PROVENANCE_FORM = "expected <!-- learned YYYY-MM-DD · commit <hex> -->"


@dataclass(frozen=True, slots=True)
class Note:
    """One note of the memory file. ``line`` is the 1-based line of its header (0: not from a file)."""

    kind: Kind
    subject: str
    body: str = ""
    learned: date | None = None
    commit: str | None = None  # lowercase hex, possibly abbreviated
    line: int = 0


@dataclass(frozen=True, slots=True)
class MalformedNoteLine:
    """A line that looked like part of the grammar and was not: its 1-based number, text and why.

    ``lost_block`` is True for a bad header (its whole block went unread), False for a bad provenance
    comment (the note was kept, without the provenance parts that did not parse).
    """

    line: int
    text: str
    reason: str
    lost_block: bool = True


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """What a memory file holds, in file order (the last note is the most recent), and what it could not."""

    notes: tuple[Note, ...] = ()
    malformed: tuple[MalformedNoteLine, ...] = field(default=())

    @property
    def unreadable_blocks(self) -> int:
        """How many blocks (a bad header and its body) could not be read."""
        return sum(1 for m in self.malformed if m.lost_block)


def header_problem(line: str) -> str | None:
    """Why a header-looking line is not a valid header, or None when it is valid."""
    if line[:1] in (" ", "\t"):
        return "a header starts at the beginning of the line, not indented"
    if not line.startswith("## "):
        return "'##' must be followed by a space: ## <kind>: <subject>"
    match = _HEADER.match(line)
    if match is None:
        return f"no ':' after the kind: expected ## <kind>: <subject>; {_KINDS_SENTENCE}"
    kind = match["kind"].strip().lower()
    if not kind:
        return f"no kind before ':'; {_KINDS_SENTENCE}"
    if kind not in KINDS:
        return f"{match['kind'].strip()!r} is not a kind of note; {_KINDS_SENTENCE}"
    if not match["subject"].strip():
        return f"no subject after '{kind}:'"
    return None


def _parse_provenance(text: str) -> tuple[date | None, str | None, list[str]]:
    """(learned, commit, problems) of a provenance comment's text (already stripped)."""
    match = _PROVENANCE.match(text)
    if match is None:
        return None, None, [f"provenance comment is not closed with '-->'; {_PROVENANCE_FORM}"]
    learned: date | None = None
    commit: str | None = None
    problems: list[str] = []
    for part in filter(None, _PART_SPLIT.split(match["inner"].strip())):
        word, _, value = part.partition(" ")
        value = value.strip()
        if word.lower() == "learned" and _DATE.match(value):
            try:
                learned = date.fromisoformat(value)
            except ValueError:
                problems.append(f"{value!r} is not a date")
        elif word.lower() == "commit" and _COMMIT.match(value.lower()):
            commit = value.lower()
        else:
            problems.append(f"cannot read {part!r}")
    if problems:
        problems.append(_PROVENANCE_FORM)
    return learned, commit, problems


@dataclass(slots=True)
class _Open:
    """The note being read: its header, provenance and body lines so far."""

    kind: Kind
    subject: str
    line: int
    learned: date | None = None
    commit: str | None = None
    provenance_open: bool = True  # only blank lines so far: a provenance comment may still come
    body: list[str] = field(default_factory=list)

    def close(self) -> Note:
        return Note(
            kind=self.kind,
            subject=self.subject,
            body="\n".join(self.body).strip(),
            learned=self.learned,
            commit=self.commit,
            line=self.line,
        )


def parse_memory(text: str) -> MemoryFile:
    """Read a memory file's text into notes (file order) and reports of malformed lines. Never raises."""
    notes: list[Note] = []
    malformed: list[MalformedNoteLine] = []
    current: _Open | None = None
    for number, raw in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        line = raw.removesuffix("\r")
        if _HEADER_LIKE.match(line):
            if current is not None:
                notes.append(current.close())
                current = None
            problem = header_problem(line)
            if problem is not None:
                malformed.append(MalformedNoteLine(number, line, problem))
                continue
            match = _HEADER.match(line)
            assert match is not None  # header_problem returned None
            kind = cast(Kind, match["kind"].strip().lower())
            current = _Open(kind=kind, subject=match["subject"].strip(), line=number)
            continue
        if current is None:
            continue  # the preamble, or the body of a block that could not be read
        stripped = line.strip()
        if current.provenance_open and stripped:
            current.provenance_open = False
            if _PROVENANCE_LIKE.match(stripped):
                current.learned, current.commit, problems = _parse_provenance(stripped)
                if problems:
                    malformed.append(MalformedNoteLine(number, line, "; ".join(problems), lost_block=False))
                continue
        current.body.append(line.rstrip())
    if current is not None:
        notes.append(current.close())
    return MemoryFile(notes=tuple(notes), malformed=tuple(malformed))


def new_note(kind: str, subject: str, body: str = "", *, learned: date | None, commit: str | None) -> Note:
    """Validate a note a person is adding; raises NoteRejected saying what to change."""
    kind_key = kind.strip().lower()
    if kind_key not in KINDS:
        raise NoteRejected(f"{kind!r} is not a kind of note; {_KINDS_SENTENCE}")
    subject = subject.strip()
    if not subject:
        raise NoteRejected("the subject is empty: say in a few words what the note is about")
    if "\n" in subject or "\r" in subject:
        raise NoteRejected("the subject is one line; put the rest in the body")
    body_lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body = "\n".join(line.rstrip() for line in body_lines).strip()
    for offset, body_line in enumerate(body.split("\n"), start=1):
        if _HEADER_LIKE.match(body_line):
            raise NoteRejected(
                f"body line {offset} starts with '##' and would be read as a new note: {body_line!r}"
            )
    if commit is not None and not _COMMIT.match(commit.lower()):
        raise NoteRejected(f"{commit!r} is not a commit id (4 to 64 hex digits)")
    if learned is None and commit is None and _PROVENANCE_LIKE.match(body):
        raise NoteRejected("a body may not start with a provenance comment (<!-- learned ... -->)")
    return Note(
        kind=kind_key,
        subject=subject,
        body=body,
        learned=learned,
        commit=commit.lower() if commit else None,
    )


def format_note(note: Note) -> str:
    """The note as memory-file text, ending in one newline; parse_memory reads it back unchanged."""
    lines = [f"## {note.kind}: {note.subject}"]
    parts = []
    if note.learned is not None:
        parts.append(f"learned {note.learned.isoformat()}")
    if note.commit is not None:
        parts.append(f"commit {note.commit}")
    if parts:
        lines.append(f"<!-- {' · '.join(parts)} -->")
    if note.body:
        lines += ["", note.body]
    return "\n".join(lines) + "\n"


def append_separator(tail: str) -> str:
    """What to write before a new note, given the end of the existing file (``""`` if empty/missing)."""
    if not tail:
        return ""
    if not tail.endswith("\n"):
        return "\n\n"
    return "" if tail.endswith("\n\n") else "\n"
