"""The files a turn changed, measured by the harness: the working tree at turn start vs at turn end.

For the publisher SDK and hooks. A harness that can run ``git`` in the workspace calls ``snapshot(ws)``
when the turn starts and ``changed_files(before, snapshot(ws))`` when it ends, and sends the result as
``harness_meta.changed_files`` (optional; the v1 schema is unchanged for everyone else). Extraction then
takes that list as the truth instead of reading the turn's commands.

A snapshot is ``git status --porcelain -z --untracked-files=all`` plus a content hash of each listed file,
so a file some earlier turn left modified, and that this turn did not touch, has the same hash at both
ends and is not counted; a file this turn changed back to its committed state drops out of ``git status``
and is counted. Ignored files (build outputs, ``.pyc``) are never listed.

Bounded: the whole snapshot gives up after ``deadline_s`` seconds and ``max_files`` files (then it is
``None``: send no list rather than a wrong one); a file over ``max_file_bytes`` is fingerprinted by size
and modification time instead of read. ``snapshot`` never raises for a missing ``git``, a directory that is
no repository or a file that vanished. ``changed_files`` is pure.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass

DEADLINE_S = 2.0
MAX_FILES = 1_000  # the schema's bound on harness_meta.changed_files (ingest.schema.MAX_CHANGED_FILES)
MAX_FILE_BYTES = 4 * 1024 * 1024
_DELETED = "deleted"


@dataclass(frozen=True)
class TreeSnapshot:
    """The working tree's changes at one moment: path (relative to the repository root) -> fingerprint."""

    files: Mapping[str, str]


def _porcelain(workdir: str, timeout: float) -> list[tuple[str, str]] | None:
    """(status, path) pairs of ``git status``, or ``None`` when git cannot tell."""
    try:
        done = subprocess.run(
            ["git", "-C", workdir, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames"],
            capture_output=True,
            timeout=max(timeout, 0.01),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    entries: list[tuple[str, str]] = []
    for record in done.stdout.split(b"\0"):
        if len(record) > 3:
            entries.append((record[:2].decode("ascii", "replace"), os.fsdecode(record[3:])))
    return entries


def _fingerprint(path: str, max_file_bytes: int) -> str:
    try:
        stat = os.stat(path)
        if stat.st_size > max_file_bytes:
            return f"size:{stat.st_size}:mtime:{stat.st_mtime_ns}"
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
        return digest.hexdigest()
    except FileNotFoundError:
        return _DELETED
    except OSError:
        return "unreadable"


def _toplevel(workdir: str, timeout: float) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", workdir, "rev-parse", "--show-toplevel"],
            capture_output=True,
            timeout=max(timeout, 0.01),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return os.fsdecode(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def snapshot(
    workdir: str,
    *,
    deadline_s: float = DEADLINE_S,
    max_files: int = MAX_FILES,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> TreeSnapshot | None:
    """The working tree's changed and untracked files with their fingerprints, or ``None`` when git cannot
    tell within the bounds (no repository, no git, too slow, too many files)."""
    start = time.monotonic()
    root = _toplevel(workdir, deadline_s)
    entries = None if root is None else _porcelain(root, deadline_s - (time.monotonic() - start))
    if root is None or entries is None or len(entries) > max_files:
        return None
    files: dict[str, str] = {}
    for status, path in entries:
        if time.monotonic() - start > deadline_s:
            return None
        if "D" in status:
            files[path] = _DELETED
        else:
            files[path] = _fingerprint(os.path.join(root, path), max_file_bytes)
    return TreeSnapshot(files=files)


def changed_files(before: TreeSnapshot | None, after: TreeSnapshot | None) -> list[str] | None:
    """Paths whose state differs between the two snapshots (sorted), or ``None`` when either is missing.

    A path listed at only one end changed in between (made dirty, or brought back to its committed
    state); a path listed at both ends changed when its fingerprint differs."""
    if before is None or after is None:
        return None
    paths = set(before.files) | set(after.files)
    return sorted(p for p in paths if before.files.get(p) != after.files.get(p))
