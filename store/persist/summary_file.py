"""The summary file beside a log (``<project-safe>.summary.json``): a ``LogSummary`` and which bytes it is of.

Rules this module obeys:

- It is derived: the log is the truth. A summary is used only when its ``Stamp`` still holds for the
  log on disk (the log's device, inode, size and mtime, and the sha256 of its last whole line at the
  offset it was at: what ``store.persist.fixlog`` trusts its parse cache by). A missing, torn, unreadable,
  older-format or stale file (a crash between the log write and this one, a writer of an older version,
  a log edited by hand) is not an error: the caller summarizes the log again.
- It is written in place and sealed (``fsio.overwrite_sealed``: ``pwrite`` at 0, cut to length, no fsync,
  the sha256 of the body after it), so a torn or interleaved write is found by its checksum. Not temp
  file + rename: a rename over an existing file makes ext4 flush the new file's data first
  (``auto_da_alloc``), 2-3 ms an append on this machine's disk against 0.01 ms in place
  (``bench/summary_ab.py``'s notes). The index file is written in place too, its seal in a sibling file
  (``fsio.overwrite_with_seal``: the index is a contract, plain JSON).
- Writers write it under the project's write lock after the log. A reader that had to summarize the
  log again writes it too, without the lock: a summary it writes for bytes that changed meanwhile
  carries their stamp, so it is found stale; a write interleaved with a writer's fails its checksum.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson

from store.errors import unavailable
from store.persist.fixlog import Snapshot, pread_all
from store.persist.fsio import overwrite_sealed, seal, unseal
from store.summary import LogSummary

VERSION: Final = 1
T = TypeVar("T")


@dataclass(frozen=True)
class Stamp:
    """Which bytes of a log a summary was made from."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    complete_len: int  # bytes up to and including the last newline
    probe_len: int  # length of the last whole line
    probe_sha256: str

    @classmethod
    def of(cls, snapshot: Snapshot) -> Stamp | None:
        """The stamp of a parse; None when there is no log file."""
        identity = snapshot.identity
        if identity is None:
            return None
        digest = hashlib.sha256(snapshot.probe).hexdigest()
        return cls(
            identity.dev, identity.ino, identity.size, identity.mtime_ns,
            snapshot.complete_len, len(snapshot.probe), digest,
        )  # fmt: skip

    def holds(self, log: Path) -> bool:
        """Whether ``log`` still holds the bytes this stamp was made from (one open, fstat and pread).

        Raises StoreUnavailable naming the log when it exists but cannot be read.
        """
        try:
            fd = os.open(log, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise unavailable(log, exc) from exc
        try:
            stat = os.fstat(fd)
            if (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns) != (
                self.dev, self.ino, self.size, self.mtime_ns,
            ):  # fmt: skip
                return False
            probe = pread_all(fd, self.probe_len, self.complete_len - self.probe_len)
        except OSError as exc:
            raise unavailable(log, exc) from exc
        finally:
            os.close(fd)
        return hashlib.sha256(probe).hexdigest() == self.probe_sha256


def stamp_json(stamp: Stamp) -> dict[str, int | str]:
    """``stamp`` as a JSON object (``stamp_from_json`` reads it back). Pure."""
    return {
        "dev": stamp.dev, "ino": stamp.ino, "size": stamp.size, "mtime_ns": stamp.mtime_ns,
        "complete_len": stamp.complete_len, "probe_len": stamp.probe_len, "probe_sha256": stamp.probe_sha256,
    }  # fmt: skip


def stamp_from_json(log: Any) -> Stamp:
    """The ``Stamp`` ``stamp_json`` wrote; raises KeyError, TypeError or ValueError for anything else."""
    return Stamp(
        int(log["dev"]), int(log["ino"]), int(log["size"]), int(log["mtime_ns"]),
        int(log["complete_len"]), int(log["probe_len"]), str(log["probe_sha256"]),
    )  # fmt: skip


def _body(stamp: Stamp, summary: LogSummary) -> bytes:
    return orjson.dumps({"v": VERSION, "log": stamp_json(stamp), "summary": summary.to_json()})


def encode(stamp: Stamp, summary: LogSummary) -> bytes:
    """The file's bytes for ``summary`` of the log bytes ``stamp`` names (sealed: ``fsio.seal``). Pure."""
    return seal(_body(stamp, summary))


def decode_stamped(
    data: bytes, version: int, field: str, parse: Callable[[Any], T]
) -> tuple[Stamp, T] | None:
    """A sealed ``{"v": version, "log": <stamp>, field: ...}`` file's stamp and ``parse`` of its ``field``;
    None for anything else (torn, interleaved, another version, ``parse`` raising ValueError). Pure."""
    body = unseal(data)
    if body is None:
        return None
    try:
        obj = orjson.loads(body)
        if not isinstance(obj, dict) or obj.get("v") != version:
            return None
        return stamp_from_json(obj["log"]), parse(obj[field])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def decode(data: bytes) -> tuple[Stamp, LogSummary] | None:
    """What ``encode`` wrote; None for anything else (torn, interleaved, another version). Pure."""
    return decode_stamped(data, VERSION, "summary", LogSummary.from_json)


def read_summary(path: Path, log: Path) -> tuple[Stamp, LogSummary] | None:
    """The summary in ``path`` when it is of the bytes ``log`` holds now; None otherwise.

    Raises StoreUnavailable naming the log when it exists but cannot be read (an unreadable summary
    file is only a missing one).
    """
    try:
        data = path.read_bytes()
    except OSError:
        return None
    found = decode(data)
    if found is None or not found[0].holds(log):
        return None
    return found


def write_summary(path: Path, stamp: Stamp, summary: LogSummary) -> None:
    """Overwrite the summary file in place (``fsio.overwrite_sealed``; no fsync: it is checked against the
    log when read). Raises StoreUnavailable naming the path."""
    overwrite_sealed(path, _body(stamp, summary))
