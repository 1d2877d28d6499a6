"""The usage file beside a log (``<project-safe>.usage.json``): each fix's use (``store.usage``) and which
bytes of the log it is of.

Derived, like the summary file (``store.persist.summary_file``, whose rules it follows): the log's
entries carry the sessions' records, and this file only saves recomputing them. It is used only while
its ``Stamp`` holds for the log on disk; a missing, torn, older-format or stale file is not an error
(the caller counts the log's entries again). Written in place and sealed, under the project's write lock
after the log; a reader that had to count again writes it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson

from store.persist.fsio import overwrite_sealed
from store.persist.summary_file import Stamp, decode_stamped, stamp_json
from store.usage import FixUse, Usage, from_json, to_json

VERSION: Final = 1


def encode_body(stamp: Stamp, usage: Usage) -> bytes:
    """The file's body (before the seal) for ``usage`` of the log bytes ``stamp`` names. Pure."""
    return orjson.dumps({"v": VERSION, "log": stamp_json(stamp), "usage": to_json(usage)})


def decode(data: bytes) -> tuple[Stamp, dict[str, FixUse]] | None:
    """What ``write_usage`` wrote; None for anything else (torn, interleaved, another version). Pure."""
    return decode_stamped(data, VERSION, "usage", from_json)


def read_usage(path: Path, stamp: Stamp) -> dict[str, FixUse] | None:
    """The usage in ``path`` when it is of the log bytes ``stamp`` names; None otherwise (an unreadable
    file is only a missing one)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    found = decode(data)
    return found[1] if found is not None and found[0] == stamp else None


def write_usage(path: Path, stamp: Stamp, usage: Usage) -> None:
    """Overwrite the usage file in place (``fsio.overwrite_sealed``, no fsync). Raises StoreUnavailable
    naming the path."""
    overwrite_sealed(path, encode_body(stamp, usage))
