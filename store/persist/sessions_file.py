"""The session record file beside a log (``<project-safe>.sessions.json``): the project's sessions that made
no entry (``store.sessions``).

Unlike the summary and usage files it is not derived: no other file holds these sessions, so it is
replaced atomically and durably (``fsio.replace_atomically``: temp file, fsync, rename, directory fsync)
under the project's write lock, and sealed (``fsio.seal``) so damage is found. A file that is unreadable
or fails its seal (a disk fault, a hand edit) is set aside as ``<name>.damaged`` when next written, never
silently merged into. Not ``.jsonl``: a directory listing must never take it for a log.

Once a log is full, every rotation folds the sessions of the entries it drops into this file (read, join,
rewrite), and a busy project's file holds ``store.sessions.KEPT`` records: decoding them was most of a
fold's CPU (``bench/sessions_fold_ab.py``). So the records last read or written are kept per path with
the file's seal (its length and trailing sha256 of the body): a file whose bytes end in the same seal
holds the same records, and is not decoded again; any other content (another writer's) is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Final

import orjson

from store.errors import unavailable
from store.persist.fsio import replace_atomically, seal, unseal
from store.sessions import SessionRecord, from_json, merge, to_json

VERSION: Final = 1
SEAL_CHARS: Final = 66  # "\n" + 64 hex digits + "\n": the end of every sealed file (``fsio.seal``)
CACHED_FILES: Final = 64  # paths whose decoded records a process keeps (the longest unwritten go first)
_log = logging.getLogger("store.persist")
_cache: dict[Path, tuple[tuple[int, bytes], str, tuple[SessionRecord, ...]]] = {}
_cache_lock = threading.Lock()


def _sealed_as(data: bytes) -> tuple[int, bytes]:
    """What identifies the content of a sealed file: its length and its seal's digest line."""
    return len(data), data[-SEAL_CHARS:]


def _remember(path: Path, data: bytes, project: str, records: list[SessionRecord]) -> None:
    with _cache_lock:  # the API's threads read records too
        _cache.pop(path, None)
        if len(_cache) >= CACHED_FILES:
            del _cache[next(iter(_cache))]
        _cache[path] = _sealed_as(data), project, tuple(records)


def encode(project: str, records: list[SessionRecord]) -> bytes:
    """The file's bytes (sealed) for ``records`` of ``project``. Pure."""
    body = {"v": VERSION, "project": project, "sessions": [to_json(r) for r in records]}
    return seal(orjson.dumps(body))


def decode(data: bytes) -> tuple[str, list[SessionRecord]] | None:
    """What ``encode`` wrote: the project and its records; None for anything else. Pure."""
    body = unseal(data)
    if body is None:
        return None
    try:
        obj = orjson.loads(body)
        if not isinstance(obj, dict) or obj.get("v") != VERSION or not isinstance(obj["project"], str):
            return None
        project = obj["project"]
        return project, [from_json(project, r) for r in obj["sessions"]]
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def read_sessions(path: Path) -> tuple[str, list[SessionRecord]] | None:
    """The project and records in ``path``; None when there is no file or it cannot be decoded (logged).
    Raises StoreUnavailable naming the path when it exists but cannot be read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise unavailable(path, exc) from exc
    cached = _cache.get(path)
    if cached is not None and cached[0] == _sealed_as(data):
        return cached[1], list(cached[2])
    found = decode(data)
    if found is None:
        _log.warning("fix store: %s is damaged (its seal or format does not hold); not read", path)
        return None
    _remember(path, data, *found)
    return found


def write_sessions(path: Path, project: str, records: list[SessionRecord], *, damaged: bool = False) -> None:
    """Replace ``path`` with ``records`` (atomic and durable); ``damaged``: the file there could not be
    decoded, and is first kept as ``<name>.damaged``. Raises StoreUnavailable naming the path."""
    if damaged:
        with contextlib.suppress(OSError):
            os.replace(path, path.with_name(path.name + ".damaged"))
    data = encode(project, records)
    replace_atomically(path, data)
    _remember(path, data, project, records)


def join_into(path: Path, project: str, records: list[SessionRecord]) -> list[SessionRecord]:
    """Join ``records`` (of ``project``) into the file at ``path`` (``store.sessions.merge``: idempotent)
    and rewrite it when that changed anything; returns the records it then holds. The caller holds the
    project's write lock. Raises StoreUnavailable naming the path."""
    found = read_sessions(path)
    held = found[1] if found is not None else []
    damaged = found is None and path.exists()
    kept = merge(held, records)
    if damaged or kept != held:  # else nothing new: a replayed batch
        write_sessions(path, project, kept, damaged=damaged)
    return kept
