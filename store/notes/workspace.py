"""The workspace side of project notes: ``.fixmem/memory.md`` on disk, and git (a subprocess).

The one module of ``store.notes`` that does I/O: a thin shell around the pure grammar and renderer. Used
by ``fixmem notes``, and by whatever builds the prompt for an agent working in a workspace:
``workspace_prompt_block`` (notes first, then recalled fixes).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Final

from store import FixEntry, Recalled
from store.notes.errors import MemoryUnreadable
from store.notes.grammar import (
    MEMORY_FILE,
    MalformedNoteLine,
    MemoryFile,
    Note,
    append_separator,
    format_note,
    parse_memory,
)
from store.notes.render import DEFAULT_CEILING, combined_prompt_block

GIT_TIMEOUT_SECONDS: Final = 60.0


# -- files -------------------------------------------------------------------------------------------


def memory_path(workspace: Path) -> Path:
    """``<workspace>/.fixmem/memory.md``."""
    return workspace / MEMORY_FILE


def read_memory(workspace: Path) -> MemoryFile | None:
    """The parsed memory file of ``workspace``, or None when there is none (the ordinary case).

    Raises MemoryUnreadable (naming the path) when it exists and cannot be read or is not UTF-8.
    """
    path = memory_path(workspace)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemoryUnreadable(f"{path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MemoryUnreadable(f"{path}:{line}: not UTF-8 (byte {exc.start}); save it as UTF-8") from exc
    return parse_memory(text)


def append_note(workspace: Path, note: Note) -> int:
    """Append ``note`` to the memory file (created if missing) under an exclusive flock; its header line.

    Raises MemoryUnreadable when the file or its directory cannot be written.
    """
    path = memory_path(workspace)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released on close
            handle.seek(0)
            existing = handle.read()
            separator = append_separator(existing[-2:].decode("utf-8", errors="replace"))
            handle.write((separator + format_note(note)).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise MemoryUnreadable(f"{path}: {exc.strerror or exc}") from exc
    return existing.count(b"\n") + separator.count("\n") + 1


# -- git -----------------------------------------------------------------------------------------------


def _git(workspace: Path, *args: str) -> str | None:
    """stdout of ``git -C workspace args``, or None when git is missing or the command fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(workspace), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_head(workspace: Path) -> str | None:
    """The abbreviated commit id of the workspace's HEAD, or None (not a repository, no commit yet)."""
    out = _git(workspace, "rev-parse", "--short", "--verify", "--quiet", "HEAD")
    head = (out or "").strip().lower()
    return head or None


_KNOWN_CACHE_SIZE: Final = 32
_known_cache: dict[str, tuple[str, frozenset[str]]] = {}
_known_cache_lock = threading.Lock()


def known_commits(workspace: Path) -> frozenset[str]:
    """Full ids of every commit reachable from a ref; empty when nothing could be checked.

    Empty (nothing marked stale) outside a repository, and in a shallow clone, where history is
    missing by design and every older commit would look gone. The history walk (``git rev-list --all``,
    slow on a large repository) is done again only when a ref has moved: a per-process cache is keyed by
    the workspace and the ids all refs and HEAD point at.
    """
    state = _git(workspace, "rev-parse", "--is-shallow-repository", "HEAD")
    if state is None or not state.startswith("false"):
        return frozenset()
    refs = _git(workspace, "for-each-ref", "--format=%(objectname)") or ""
    fingerprint = hashlib.sha256((state + refs).encode()).hexdigest()
    key = os.path.realpath(workspace)
    with _known_cache_lock:
        cached = _known_cache.get(key)
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    out = _git(workspace, "rev-list", "--all")
    known = frozenset(out.split()) if out else frozenset()
    with _known_cache_lock:
        if len(_known_cache) >= _KNOWN_CACHE_SIZE:
            _known_cache.pop(next(iter(_known_cache)))
        _known_cache[key] = (fingerprint, known)
    return known


_workspace_commits = known_commits  # the parameter below shadows the function's name


# -- the combined prompt block for a workspace ---------------------------------------------------------


def workspace_prompt_block(
    workspace: str | os.PathLike[str] | None,
    recalled: Sequence[Recalled] | Sequence[FixEntry],
    budget_tokens: int = 600,
    *,
    now: float,
    ceiling: int = DEFAULT_CEILING,
    known_commits: Collection[str] | None = None,
) -> str:
    """The workspace's notes, then the recalled fixes, within ``budget_tokens`` (``combined_prompt_block``).

    Reads ``<workspace>/.fixmem/memory.md`` and, only when a note or a fix carries a commit, asks git for
    the known commits (unless ``known_commits`` is given). Never raises for the memory file: one that
    cannot be read shows as a block that could not be read. Without a workspace: the learned fixes alone.
    """
    if workspace is None or not os.fspath(workspace):
        return combined_prompt_block(None, recalled, budget_tokens, now=now, ceiling=ceiling)
    where = Path(workspace)
    memory: MemoryFile | None
    try:
        memory = read_memory(where)
    except MemoryUnreadable as exc:
        memory = MemoryFile(malformed=(MalformedNoteLine(0, "", str(exc)),))
    entries = [r.entry if isinstance(r, Recalled) else r for r in recalled]
    needs_git = any(e.commit for e in entries) or any(n.commit for n in (memory.notes if memory else ()))
    if known_commits is None and needs_git:
        known_commits = _workspace_commits(where)
    return combined_prompt_block(
        memory,
        recalled,
        budget_tokens,
        known_commits=known_commits,
        workspace=str(where),
        now=now,
        ceiling=ceiling,
    )
