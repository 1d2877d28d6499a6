"""Hand-written project memory: the ``.fixmem/memory.md`` grammar, its prompt block, and the review queue.

Pure: text and values in, values out, except ``store.notes.workspace``, the thin shell that reads and
appends the file and asks git for HEAD and the known commits; nothing else here touches a file, a clock
or a subprocess.
"""

from __future__ import annotations

from store.notes.errors import MemoryUnreadable, NoteRejected, NotesError
from store.notes.grammar import (
    KIND_MEANINGS,
    KINDS,
    MEMORY_FILE,
    Kind,
    MalformedNoteLine,
    MemoryFile,
    Note,
    append_separator,
    format_note,
    new_note,
    parse_memory,
)
from store.notes.render import DEFAULT_CEILING, combined_prompt_block, render_notes, stale_flags
from store.notes.suggest import Suggestion, note_from_fix, promoted_ids, suggest_notes

__all__ = [
    "DEFAULT_CEILING",
    "KINDS",
    "KIND_MEANINGS",
    "MEMORY_FILE",
    "Kind",
    "MalformedNoteLine",
    "MemoryFile",
    "MemoryUnreadable",
    "Note",
    "NoteRejected",
    "NotesError",
    "Suggestion",
    "append_separator",
    "combined_prompt_block",
    "format_note",
    "new_note",
    "note_from_fix",
    "parse_memory",
    "promoted_ids",
    "render_notes",
    "stale_flags",
    "suggest_notes",
]
