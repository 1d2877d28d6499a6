"""What ``fixmem notes check`` reports about a memory file: each note (stale? beyond the ceiling?) and the
malformed lines, as JSON or as text lines. Pure: a parsed file and the known commits in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.notes.grammar import MemoryFile, Note
from store.notes.render import NOTE_STALE_MARK, stale_flags


@dataclass(frozen=True, slots=True)
class CheckedNote:
    """A note, whether its commit is gone, and whether it is within the ceiling (reaches the prompt)."""

    note: Note
    stale: bool
    shown: bool


def check_notes(memory: MemoryFile, known: frozenset[str], ceiling: int) -> list[CheckedNote]:
    """Every note of ``memory`` in file order; the newest ``ceiling`` are shown."""
    flags = stale_flags(memory.notes, known)
    first_shown = max(0, len(memory.notes) - ceiling)
    return [
        CheckedNote(note, stale, index >= first_shown)
        for index, (note, stale) in enumerate(zip(memory.notes, flags, strict=True))
    ]


def _provenance(note: Note) -> str:
    parts = [f"learned {note.learned.isoformat()}"] if note.learned else []
    parts += [f"commit {note.commit}"] if note.commit else []
    return f" ({' · '.join(parts)})" if parts else " (no provenance)"


def check_json(
    path: Path, memory: MemoryFile | None, rows: list[CheckedNote], ceiling: int, *, checked: bool
) -> dict[str, Any]:
    """The ``--format json`` report; ``memory`` None: there is no file; ``checked``: commits were known."""
    return {
        "path": str(path),
        "exists": memory is not None,
        "ceiling": ceiling,
        "commits_checked": checked,
        "notes": [
            {
                "line": r.note.line,
                "kind": r.note.kind,
                "subject": r.note.subject,
                "body": r.note.body,
                "learned": r.note.learned.isoformat() if r.note.learned else None,
                "commit": r.note.commit,
                "stale": r.stale,
                "shown": r.shown,
            }
            for r in rows
        ],
        "malformed": [
            {"line": m.line, "text": m.text, "reason": m.reason, "lost_block": m.lost_block}
            for m in (memory.malformed if memory else ())
        ],
    }


def check_text(
    path: Path, memory: MemoryFile | None, rows: list[CheckedNote], ceiling: int, *, checked: bool
) -> list[tuple[str, bool]]:
    """The text report as ``(line, to stderr)`` pairs (the malformed lines go to stderr)."""
    if memory is None:
        return [(f"no memory file at {path} (add one with: fixmem notes add)", False)]
    stale = [r for r in rows if r.stale]
    hidden = sum(1 for r in rows if not r.shown)
    out = [
        f"{path}: {len(rows)} note(s), {len(memory.malformed)} malformed line(s), {len(stale)} stale note(s)"
    ]
    for r in rows:
        marks = "" if r.shown else "  [beyond the ceiling]"
        marks += f"  {NOTE_STALE_MARK}" if r.stale else ""
        out.append(f"  {r.note.line:>5}  {r.note.kind:<10}  {r.note.subject}{_provenance(r.note)}{marks}")
    if hidden:
        out.append(f"{hidden} older note(s) are beyond the ceiling of {ceiling} and do not reach the prompt")
    if not checked:
        out.append("commits not checked (not a git repository, no commits, or a shallow clone)")
    out.extend(
        f"stale: {path}:{r.note.line}: {r.note.subject}: commit {r.note.commit} {NOTE_STALE_MARK}"
        for r in stale
    )
    lines = [(line, False) for line in out]
    for m in memory.malformed:
        what = "block not read" if m.lost_block else "provenance not read"
        lines.append((f"malformed: {path}:{m.line}: {m.text.strip()!r}: {m.reason} ({what})", True))
    return lines
