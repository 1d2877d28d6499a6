"""The JSONL fix log on disk: parse, read (with a cache check), repair, quarantine, append, rewrite.

Rules this module obeys:

- Readers take no lock and change nothing. They parse complete lines only; bytes after the last newline
  may be a write in progress and are set aside as ``tail``, not reported.
- Writers call ``prepare_for_write`` under the project's write lock first: a tail found there is a torn
  write (the writer holding the lock is us) and is moved to the quarantine file with its reason, then
  the log is cut back to its last newline. A tail that is itself a complete, valid entry (a writer that
  forgot the newline) is kept: the newline is added instead.
- A malformed complete line stays where it is on append, is reported by ``read`` and ``stats`` (line
  number, reason), and is moved to the quarantine file (never dropped) when the log is rewritten.
- A snapshot is identified by the file's (device, inode, size, mtime_ns) plus its last 64 bytes, so a
  cached parse is reused only for the very same bytes; a file that only grew is parsed from where the
  cache ended.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from pydantic import ValidationError

from store.entry import FixEntry
from store.errors import unavailable
from store.persist.fsio import (
    append_durably,
    overwrite_with_seal,
    read_with_seal,
    replace_atomically,
    truncate_durably,
)


def _last_line(data: bytes, end: int | None = None) -> bytes:
    """The last whole line of ``data[:end]`` (which starts at a line start and ends with a newline).

    A snapshot's probe. The line holds its entry's id, unique in the log, so a log rewritten into a file
    that reuses the old inode number shows it at the same offset only if no line before it left the log
    (not caught: an earlier line edited to the same length). A fixed 64-byte tail could not tell: the
    optional fields that end a line are ``null`` in most lines, so every line ended with the same bytes.
    """
    end = len(data) if end is None else end
    return data[data.rfind(b"\n", 0, max(end - 1, 0)) + 1 : end]


@dataclass(frozen=True)
class MalformedLine:
    """A complete line of the log that is not a valid entry: its 1-based line number and why."""

    line_no: int
    reason: str


@dataclass(frozen=True)
class BadLine:
    """A malformed line with its exact bytes (kept so a rewrite can quarantine it)."""

    line_no: int
    reason: str
    raw: bytes

    def report(self) -> MalformedLine:
        """The line number and reason, without the bytes."""
        return MalformedLine(self.line_no, self.reason)


@dataclass(frozen=True)
class FileIdentity:
    """Which bytes a snapshot was parsed from (with ``Snapshot.probe``)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileIdentity:
        """The identity of a ``stat`` result."""
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class Snapshot:
    """One parse of a log file: its valid entries (log order), their exact lines, its bad lines."""

    identity: FileIdentity | None  # None: there is no log file
    complete_len: int = 0  # bytes up to and including the last newline
    probe: bytes = b""  # the last whole line of the complete part (``_last_line``)
    entries: tuple[FixEntry, ...] = ()
    raw: tuple[bytes, ...] = ()  # each entry's exact line, newline included
    bad: tuple[BadLine, ...] = ()
    next_line_no: int = 1
    tail: bytes = b""  # bytes after the last newline (a write in progress, or torn)
    ids: frozenset[str] = field(default=frozenset())

    @property
    def malformed(self) -> list[MalformedLine]:
        """Line number and reason of every malformed complete line."""
        return [b.report() for b in self.bad]


EMPTY = Snapshot(identity=None)


def parse_line(raw: bytes) -> FixEntry | str:
    """The entry on one line (without its newline), or the reason it is not one."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return f"invalid JSON: {exc}"
    if not isinstance(obj, dict):
        return f"not a JSON object (a {type(obj).__name__})"
    try:
        return FixEntry.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        return f"invalid entry: {where}: {first['msg']}" + (
            f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        )


def parse(data: bytes, base: Snapshot, identity: FileIdentity) -> Snapshot:
    """``base`` extended by the lines in ``data`` (the bytes after ``base.complete_len``). Pure."""
    entries = list(base.entries)
    raws = list(base.raw)
    bad = list(base.bad)
    ids = set(base.ids)
    line_no = base.next_line_no
    end = data.rfind(b"\n") + 1
    start = 0
    while start < end:
        stop = data.index(b"\n", start) + 1
        line = data[start:stop]
        start = stop
        if line.strip():
            parsed = parse_line(line[:-1])
            if isinstance(parsed, str):
                bad.append(BadLine(line_no, parsed, line))
            elif parsed.id in ids:
                bad.append(BadLine(line_no, f"duplicate id {parsed.id}", line))
            else:
                entries.append(parsed)
                raws.append(line)
                ids.add(parsed.id)
        line_no += 1
    complete_len = base.complete_len + end
    probe = _last_line(data, end) if end else base.probe
    return Snapshot(
        identity=identity,
        complete_len=complete_len,
        probe=probe,
        entries=tuple(entries),
        raw=tuple(raws),
        bad=tuple(bad),
        next_line_no=line_no,
        tail=data[end:],
        ids=frozenset(ids),
    )


def pread_all(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes of ``fd`` from ``offset`` (fewer at the end of the file); raises OSError."""
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _probe_holds(fd: int, cached: Snapshot) -> bool:
    """Whether the bytes the cache ended with are still where it saw them."""
    start = cached.complete_len - len(cached.probe)
    return pread_all(fd, len(cached.probe), start) == cached.probe


def read_snapshot(path: Path, cached: Snapshot | None = None) -> tuple[Snapshot, bool]:
    """The current snapshot of the log at ``path`` and whether it merely extends ``cached``.

    Reuses ``cached`` when the file is unchanged, parses only the new bytes when it only grew. Takes no
    lock and modifies nothing. Raises StoreUnavailable naming the path when it cannot be read.
    """
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return EMPTY, False
        except OSError as exc:
            raise unavailable(path, exc) from exc
        try:
            stat = os.fstat(fd)
            identity = FileIdentity.of(stat)
            same_file = (
                cached is not None
                and cached.identity is not None
                and (cached.identity.dev, cached.identity.ino) == (identity.dev, identity.ino)
                and identity.size >= cached.complete_len
                and _probe_holds(fd, cached)
            )
            if same_file and cached is not None and cached.identity == identity:
                return cached, True
            base = cached if same_file and cached is not None else EMPTY
            data = pread_all(fd, identity.size - base.complete_len, base.complete_len)
            if FileIdentity.of(os.fstat(fd)) != identity:
                continue  # changed while we read: read again
            return parse(data, base, identity), base is not EMPTY
        except OSError as exc:
            raise unavailable(path, exc) from exc
        finally:
            os.close(fd)
    raise unavailable(path, OSError(0, "the log kept changing while being read"))


def _quarantine_record(line_no: int, reason: str, raw: bytes, source: str, now: float) -> bytes:
    text = raw.rstrip(b"\n").decode("utf-8", "replace")
    record: dict[str, object] = {"ts": now, "source": source, "line_no": line_no, "reason": reason}
    record["line"] = text
    if text.encode("utf-8") != raw.rstrip(b"\n"):  # not valid UTF-8: keep the exact bytes too
        record["line_b64"] = base64.b64encode(raw.rstrip(b"\n")).decode("ascii")
    return orjson.dumps(record) + b"\n"


def quarantine(quarantine_path: Path, lines: Sequence[BadLine], *, source: str, now: float) -> int:
    """Append ``lines`` (with reasons) to the quarantine file durably; returns how many were moved."""
    if not lines:
        return 0
    size = quarantine_path.stat().st_size if quarantine_path.exists() else 0
    data = b"".join(_quarantine_record(b.line_no, b.reason, b.raw, source, now) for b in lines)
    append_durably(quarantine_path, data, expected_size=size)
    return len(lines)


def prepare_for_write(
    path: Path, quarantine_path: Path, cached: Snapshot | None, *, now: float
) -> tuple[Snapshot, bool, int]:
    """Under the write lock: the current snapshot with any torn tail repaired.

    Returns (snapshot, whether it extends ``cached``, lines moved to quarantine). A tail that parses as a
    valid entry is completed with a newline; any other tail is moved to the quarantine file (reason: torn
    last line) and the log is cut back to its last newline.
    """
    snapshot, extends = read_snapshot(path, cached)
    if not snapshot.tail or snapshot.identity is None:
        return snapshot, extends, 0
    parsed = parse_line(snapshot.tail)
    if isinstance(parsed, FixEntry) and parsed.id not in snapshot.ids:
        append_durably(path, b"\n", expected_size=snapshot.identity.size)
        moved = 0
    else:
        reason = "torn last line (no trailing newline): " + (
            parsed if isinstance(parsed, str) else f"duplicate id {parsed.id}"
        )
        bad = BadLine(snapshot.next_line_no, reason, snapshot.tail)
        moved = quarantine(quarantine_path, [bad], source=path.name, now=now)
        truncate_durably(path, snapshot.complete_len)
    repaired, still_extends = read_snapshot(path, snapshot)
    return repaired, extends and still_extends, moved


def encode_entry(entry: FixEntry) -> bytes:
    """One log line for ``entry``: every field present (``None`` where unknown), newline-terminated."""
    return orjson.dumps(entry.model_dump(mode="json")) + b"\n"


def append_entries(
    path: Path, snapshot: Snapshot, entries: Sequence[FixEntry], lines: Sequence[bytes] | None = None
) -> Snapshot:
    """Append ``entries`` as whole lines in one write and one fsync; returns the new snapshot.

    ``snapshot`` must be the one ``prepare_for_write`` returned under the same lock. ``lines``: each
    entry's ``encode_entry`` when the caller made them already (None: encoded here).
    """
    lines = [encode_entry(e) for e in entries] if lines is None else list(lines)
    data = b"".join(lines)
    stat = append_durably(path, data, expected_size=snapshot.complete_len)
    identity = FileIdentity.of(stat)
    return Snapshot(
        identity=identity,
        complete_len=snapshot.complete_len + len(data),
        probe=_last_line(data) if data else snapshot.probe,
        entries=snapshot.entries + tuple(entries),
        raw=snapshot.raw + tuple(lines),
        bad=snapshot.bad,
        next_line_no=snapshot.next_line_no + len(lines),
        ids=snapshot.ids | {e.id for e in entries},
    )


def rewrite(
    path: Path,
    quarantine_path: Path,
    snapshot: Snapshot,
    keep: Sequence[tuple[FixEntry, bytes]],
    *,
    now: float,
) -> tuple[Snapshot, int]:
    """Replace the log with ``keep`` (entries with their exact lines); malformed lines go to quarantine.

    Atomic (temp + fsync + replace + directory fsync): on any error the old log is intact and
    StoreUnavailable naming the path is raised. Returns (new snapshot, lines quarantined).
    """
    moved = quarantine(quarantine_path, snapshot.bad, source=path.name, now=now)
    data = b"".join(raw for _, raw in keep)
    replace_atomically(path, data)
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    return (
        Snapshot(
            identity=FileIdentity.of(stat),
            complete_len=len(data),
            probe=_last_line(data),
            entries=tuple(e for e, _ in keep),
            raw=tuple(r for _, r in keep),
            next_line_no=len(keep) + 1,
            ids=frozenset(e.id for e, _ in keep),
        ),
        moved,
    )


def read_index(path: Path) -> object:
    """The parsed index file, or None when it is missing, torn, unreadable, or its seal file does not
    vouch for it (an older version's sealed index, a crash between the two writes): it is then rebuilt."""
    body = read_with_seal(path)
    if body is None:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def write_index(path: Path, index: bytes) -> None:
    """Overwrite the index file with ``index`` (JSON bytes, as they are: ``json.load`` reads the file), then
    its seal file beside it (``fsio.overwrite_with_seal``), both in place.

    Not fsynced, not renamed: the index is derived, and a torn, stale or older-format one is detected
    (the seal file, ``index.usable_index``) and rebuilt from the log.
    """
    overwrite_with_seal(path, index)
