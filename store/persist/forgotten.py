"""The ids ``forget`` deleted from a project's log: ``<project-safe>.forgotten``, one id a line.

An entry's id is a hash of its turn's identity (``store.entry.entry_id``), so replaying the turn — a
re-run backfill, a re-published event, an import of an old export — makes the same id again. Without a
record of what was forgotten, the append would find the id missing and write the entry back: the memory
a person deleted because it was wrong would return. The append refuses these ids (``AppendResult.forgotten``).

The file holds ids only (hashes, no text), is appended to under the project's write lock before the log
is rewritten (a crash in between leaves the entry in the log and already refused; ``forget`` again
deletes it), and is never rotated: an id is 21 bytes.
"""

from __future__ import annotations

import re
from pathlib import Path

from store.errors import unavailable
from store.persist.fsio import append_durably

_ID_LINE = re.compile(rb"^fix-[0-9a-f]{16}$")


def read_forgotten(path: Path) -> frozenset[str]:
    """The ids in ``path`` (none when it is missing); lines that are no id (a torn tail) are ignored."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return frozenset()
    except OSError as exc:
        raise unavailable(path, exc) from exc
    return frozenset(line.decode() for line in data.splitlines() if _ID_LINE.match(line))


def add_forgotten(path: Path, entry_id: str) -> None:
    """Append ``entry_id`` to ``path`` durably (one write, one fsync). Raises StoreUnavailable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise unavailable(path, exc) from exc
    prefix = b"\n" if data and not data.endswith(b"\n") else b""  # after a torn tail
    append_durably(path, prefix + entry_id.encode() + b"\n", expected_size=len(data))
