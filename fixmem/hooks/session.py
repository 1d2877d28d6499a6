"""Per-session hook state, and the pure choice of what to inject.

One small JSON file per session under ``<data_dir>/hooks/sessions/`` (named by a hash of the session id):
the entry ids already injected, the files already looked up, the tokens spent, the turns published.
Concurrent hooks of one session (Claude Code runs matching hooks in parallel) serialize on a ``flock``
of a sibling lock file; the file is replaced atomically (temp file + ``os.replace``), so a reader never
sees half a file. ``choose`` is pure: candidates and state in, the block and the new state out.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

HEADER = "Past fixes in this project:"  # store.recall.prompt.HEADER (checked by a test)
BYTES_PER_TOKEN = 3  # store.recall.prompt.BYTES_PER_TOKEN


def estimate_tokens(text: str) -> int:
    """``ceil(utf-8 bytes / 3)``, the store's estimate (``store.recall.prompt.estimate_tokens``)."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / BYTES_PER_TOKEN)


@dataclass(frozen=True)
class SessionState:
    """What one session has had so far."""

    injected: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    tokens: int = 0
    published: tuple[str, ...] = ()
    prompt: str = ""  # the session's last prompt (the file hook's query text)

    def to_json(self) -> dict[str, object]:
        return {
            "injected": list(self.injected),
            "files": list(self.files),
            "tokens": self.tokens,
            "published": list(self.published),
            "prompt": self.prompt,
        }

    @classmethod
    def from_json(cls, doc: object) -> SessionState:
        """The state in ``doc``; an empty state for anything malformed."""
        if not isinstance(doc, dict):
            return cls()

        def strings(key: str) -> tuple[str, ...]:
            value = doc.get(key)
            return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

        tokens, prompt = doc.get("tokens"), doc.get("prompt")
        return cls(
            injected=strings("injected"),
            files=strings("files"),
            tokens=tokens if isinstance(tokens, int) and tokens >= 0 else 0,
            published=strings("published"),
            prompt=prompt if isinstance(prompt, str) else "",
        )


@dataclass(frozen=True)
class Choice:
    """The block to inject ("" for none) and the state after injecting it."""

    block: str
    state: SessionState
    entry_ids: tuple[str, ...] = field(default=())


def choose(
    candidates: Sequence[tuple[str, str]], state: SessionState, *, prompt_budget: int, session_budget: int
) -> Choice:
    """The lines of ``candidates`` (entry id, rendered line; best first) not injected yet in this session,
    within the per-injection budget and what is left of the session's budget. Pure."""
    room = min(prompt_budget, session_budget - state.tokens)
    seen = set(state.injected)
    block, chosen = HEADER, []
    for entry_id, line in candidates:
        if entry_id in seen or entry_id in chosen or not line.strip():
            continue
        candidate = block + "\n" + line
        if estimate_tokens(candidate) > room:
            break
        block = candidate
        chosen.append(entry_id)
    if not chosen:
        return Choice("", state)
    spent = estimate_tokens(block)
    return Choice(
        block,
        replace(state, injected=state.injected + tuple(chosen), tokens=state.tokens + spent),
        tuple(chosen),
    )


def _name(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class SessionStore:
    """The state files of every session under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, session_id: str) -> Path:
        return self.directory / f"{_name(session_id)}.json"

    def read(self, session_id: str) -> SessionState:
        """The session's state (empty when unknown or unreadable)."""
        try:
            return SessionState.from_json(json.loads(self.path(session_id).read_bytes()))
        except (OSError, ValueError):
            return SessionState()

    @contextmanager
    def update(self, session_id: str) -> Iterator[list[SessionState]]:
        """Hold the session's lock; yields a one-item list with the state: replace ``[0]`` to write it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(session_id)
        with open(path.with_suffix(".lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                before = self.read(session_id)
                box = [before]
                yield box
                if box[0] != before:
                    _write_atomic(path, json.dumps(box[0].to_json(), separators=(",", ":")).encode())
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write via ``.<name>.<pid>.tmp`` + ``os.replace`` (no ``tempfile``: ~10 ms of imports saved)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with _quiet():
            os.unlink(tmp)
        raise


@contextmanager
def _quiet() -> Iterator[None]:
    with suppress(OSError):
        yield


def note_failure(hooks_dir: Path, kind: str, message: str, *, now: float | None = None) -> None:
    """Log one failure to ``hook.log`` and count it in ``counters.json`` (by kind). Never raises."""
    try:
        hooks_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
        with open(hooks_dir / "hook.log", "a", encoding="utf-8") as log:
            log.write(f"{stamp} {kind} {' '.join(message.split())[:2000]}\n")
        counters = hooks_dir / "counters.json"
        with open(hooks_dir / "counters.lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    counts = json.loads(counters.read_bytes())
                except (OSError, ValueError):
                    counts = {}
                if not isinstance(counts, dict):
                    counts = {}
                counts[kind] = int(counts.get(kind, 0)) + 1
                _write_atomic(counters, json.dumps(counts, sort_keys=True).encode())
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    except (OSError, ValueError, TypeError):
        pass


def read_counters(hooks_dir: Path) -> dict[str, int]:
    """The failure counts by kind (``{}`` when none)."""
    try:
        counts = json.loads((hooks_dir / "counters.json").read_bytes())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in counts.items() if isinstance(v, int)} if isinstance(counts, dict) else {}
