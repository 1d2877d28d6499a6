"""Per-session hook state, and the pure choice of what to inject.

One small JSON file per session under ``<data_dir>/hooks/sessions/`` (named by the session id, or a hash
of it when it is not a plain token): the entry ids already injected, the files already looked up, the
tokens spent, the turns published, the last prompt, the cwd and its project key.
Concurrent hooks of one session (Claude Code runs matching hooks in parallel) serialize on a ``flock``
of a sibling lock file; the file is replaced atomically (temp file + ``os.replace``), so a reader never
sees half a file. ``choose`` is pure: candidates and state in, the block and the new state out.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager, suppress

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

HEADER = "Past fixes in this project:"  # store.recall.prompt.HEADER (checked by a test)
BYTES_PER_TOKEN = 3  # store.recall.prompt.BYTES_PER_TOKEN
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def estimate_tokens(text: str) -> int:
    """``ceil(utf-8 bytes / 3)``, the store's estimate (``store.recall.prompt.estimate_tokens``)."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


class SessionState:
    """What one session has had so far (a value: ``replace`` makes a changed copy)."""

    __slots__ = (
        "arm",
        "cwd",
        "files",
        "followed",
        "injected",
        "project",
        "prompt",
        "published",
        "shown",
        "tokens",
    )

    def __init__(
        self,
        *,
        injected: tuple[str, ...] = (),
        files: tuple[str, ...] = (),
        tokens: int = 0,
        published: tuple[str, ...] = (),
        prompt: str = "",
        cwd: str = "",
        project: str = "",
        arm: str = "",
        shown: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (),
        followed: tuple[str, ...] = (),
    ) -> None:
        self.injected, self.files, self.tokens = injected, files, tokens
        self.published = published
        self.prompt = prompt  # the session's last prompt (the file hook's query text)
        self.cwd, self.project = cwd, project  # the session's cwd and its project key ("": not yet)
        # The impact record (fixmem.hooks.arms): the arm of first contact ("": none yet), the fixes chosen
        # (id, surface, tier, files: injected in `memory`, the shadow in `holdback`) and the ids followed.
        self.arm, self.shown, self.followed = arm, shown, followed

    def replace(self, **changes: object) -> SessionState:
        """A copy with ``changes``."""
        fields: dict[str, object] = {name: getattr(self, name) for name in self.__slots__}
        return SessionState(**{**fields, **changes})  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionState) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SessionState({self.to_json()})"

    def to_json(self) -> dict[str, object]:
        return {
            "injected": list(self.injected),
            "files": list(self.files),
            "tokens": self.tokens,
            "published": list(self.published),
            "prompt": self.prompt,
            "cwd": self.cwd,
            "project": self.project,
            "arm": self.arm,
            "shown": [[i, s, t, list(f)] for i, s, t, f in self.shown],
            "followed": list(self.followed),
        }

    @classmethod
    def from_json(cls, doc: object) -> SessionState:
        """The state in ``doc``; an empty state for anything malformed."""
        if not isinstance(doc, dict):
            return cls()

        def strings(key: str) -> tuple[str, ...]:
            value = doc.get(key)
            return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

        def text(key: str) -> str:
            value = doc.get(key)
            return value if isinstance(value, str) else ""

        tokens = doc.get("tokens")
        shown = doc.get("shown")
        return cls(
            injected=strings("injected"),
            files=strings("files"),
            tokens=tokens if isinstance(tokens, int) and tokens >= 0 else 0,
            published=strings("published"),
            prompt=text("prompt"),
            cwd=text("cwd"),
            project=text("project"),
            arm=text("arm"),
            shown=tuple(_shown(shown)) if isinstance(shown, list) else (),
            followed=strings("followed"),
        )


def _shown(items: list[object]) -> Iterator[tuple[str, str, str, tuple[str, ...]]]:
    """The well-formed ``[id, surface, tier, [files]]`` items of a stored ``shown`` list."""
    for item in items:
        if isinstance(item, list) and len(item) == 4 and all(isinstance(v, str) for v in item[:3]):
            files = item[3] if isinstance(item[3], list) else []
            yield item[0], item[1], item[2], tuple(f for f in files if isinstance(f, str))


class Choice:
    """The block to inject ("" for none), the state after injecting it, and the entries it shows."""

    __slots__ = ("block", "entry_ids", "state")

    def __init__(self, block: str, state: SessionState, entry_ids: tuple[str, ...] = ()) -> None:
        self.block, self.state, self.entry_ids = block, state, entry_ids


def choose(
    candidates: Sequence[tuple[str, str]], state: SessionState, *, prompt_budget: int, session_budget: int
) -> Choice:
    """The lines of ``candidates`` (entry id, rendered line; best first) not injected yet in this session,
    within the per-injection budget and what is left of the session's budget. Pure."""
    room = min(prompt_budget, session_budget - state.tokens)
    seen = set(state.injected)
    block, chosen, headings = HEADER, [], set()
    for entry_id, line in candidates:
        if entry_id in seen or entry_id in chosen or not line.strip():
            continue
        heading, _, entry = line.partition("\n")
        if heading.startswith("- ") or not entry:  # no section heading before it
            heading, entry = "", line
        shown = entry if not heading or heading in headings else f"{heading}\n{entry}"
        candidate = block + "\n" + shown
        if estimate_tokens(candidate) > room:
            break
        block = candidate
        chosen.append(entry_id)
        headings.add(heading)
    if not chosen:
        return Choice("", state)
    spent = estimate_tokens(block)
    return Choice(
        block,
        state.replace(injected=state.injected + tuple(chosen), tokens=state.tokens + spent),
        tuple(chosen),
    )


def _name(session_id: str) -> str:
    """The session's file name: the id itself when it is a short plain token (Claude Code's are UUIDs),
    else a sha-256 of it (``hashlib`` loads OpenSSL: ~5 ms, paid only then)."""
    if 0 < len(session_id) <= 64 and _SAFE.issuperset(session_id):
        return session_id
    import hashlib  # noqa: PLC0415

    return "h-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class SessionStore:
    """The state files of every session under ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)

    def path(self, session_id: str) -> str:
        return os.path.join(self.directory, f"{_name(session_id)}.json")

    def read(self, session_id: str) -> SessionState:
        """The session's state (empty when unknown or unreadable)."""
        try:
            with open(self.path(session_id), "rb") as handle:
                return SessionState.from_json(json.loads(handle.read()))
        except (OSError, ValueError):
            return SessionState()

    @contextmanager
    def update(self, session_id: str) -> Iterator[list[SessionState]]:
        """Hold the session's lock; yields a one-item list with the state: replace ``[0]`` to write it."""
        os.makedirs(self.directory, exist_ok=True)
        path = self.path(session_id)
        with open(path.removesuffix(".json") + ".lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                before = self.read(session_id)
                box = [before]
                yield box
                if box[0] != before:
                    write_atomic(path, json.dumps(box[0].to_json(), separators=(",", ":")).encode())
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def write_atomic(path: str, data: bytes) -> None:
    """Write via ``.<name>.<pid>.tmp`` + ``os.replace`` (no ``tempfile``: ~10 ms of imports saved)."""
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _read_json(path: str) -> object:
    with open(path, "rb") as handle:
        return json.loads(handle.read())


def note_failure(
    hooks_dir: str | os.PathLike[str], kind: str, message: str, *, now: float | None = None
) -> None:
    """Log one failure to ``hook.log`` and count it in ``counters.json`` (by kind). Never raises."""
    try:
        directory = os.fspath(hooks_dir)
        os.makedirs(directory, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
        with open(os.path.join(directory, "hook.log"), "a", encoding="utf-8") as log:
            log.write(f"{stamp} {kind} {' '.join(message.split())[:2000]}\n")
        counters = os.path.join(directory, "counters.json")
        with open(os.path.join(directory, "counters.lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    counts = _read_json(counters)
                except (OSError, ValueError):
                    counts = {}
                if not isinstance(counts, dict):
                    counts = {}
                counts[kind] = int(counts.get(kind, 0)) + 1
                write_atomic(counters, json.dumps(counts, sort_keys=True).encode())
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    except (OSError, ValueError, TypeError):
        pass


def read_counters(hooks_dir: str | os.PathLike[str]) -> dict[str, int]:
    """The failure counts by kind (``{}`` when none)."""
    try:
        counts = _read_json(os.path.join(os.fspath(hooks_dir), "counters.json"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in counts.items() if isinstance(v, int)} if isinstance(counts, dict) else {}


CALLS_FILE = "calls.jsonl"  # the hook's recent calls, for `fixmem hook claude-code --check`
CALLS_KEPT = 20
CALLS_ROLL_BYTES = 32 << 10  # past this, the file is cut to its last CALLS_KEPT lines


def note_call(hooks_dir: str | os.PathLike[str], record: dict[str, object]) -> None:
    """Append one line describing a hook call to ``calls.jsonl`` (one ``O_APPEND`` write: concurrent hooks
    do not interleave); past ``CALLS_ROLL_BYTES`` keep its last ``CALLS_KEPT`` lines (a call appended
    during that rewrite may be lost: this is a diagnostic log, not a record). Never raises."""
    try:
        path = os.path.join(os.fspath(hooks_dir), CALLS_FILE)
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > CALLS_ROLL_BYTES:
            write_atomic(path, b"".join(recent_call_lines(path)))
    except (OSError, ValueError, TypeError):
        pass


def recent_call_lines(path: str) -> list[bytes]:
    """The last ``CALLS_KEPT`` lines of the call log ``path`` ([] when there is none). Raises nothing."""
    try:
        with open(path, "rb") as handle:
            return handle.read().splitlines(keepends=True)[-CALLS_KEPT:]
    except OSError:
        return []


def recent_calls(hooks_dir: str | os.PathLike[str]) -> list[dict[str, object]]:
    """The hook's last ``CALLS_KEPT`` calls, oldest first (unreadable lines left out)."""
    found = []
    for line in recent_call_lines(os.path.join(os.fspath(hooks_dir), CALLS_FILE)):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found
