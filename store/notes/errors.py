"""Errors raised by ``store.notes``. The tree:

- NotesError (a ``store.StoreError``): root of everything this package raises.
  - NoteRejected: a note a person is adding does not fit the grammar (unknown kind, empty subject, ...).
  - MemoryUnreadable: the memory file exists and cannot be read (permissions, not UTF-8).
"""

from __future__ import annotations

from store.errors import StoreError


class NotesError(StoreError):
    """Raised for anything that goes wrong with project notes; the root of this package's errors."""


class NoteRejected(NotesError, ValueError):
    """Raised when a note to be written is not valid; the message says what to change."""


class MemoryUnreadable(NotesError):
    """Raised when a memory file exists but cannot be read (permissions, not UTF-8); names the path."""
