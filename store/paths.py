"""Where a project's files live, and how paths are compared. Pure: no file is touched here.

Layout (the on-disk contract)::

    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.jsonl             the fix log
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.index.json        {id: [keywords...]} (plain JSON)
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.index.json.sha256 its seal: ``sha256sum``'s line
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.quarantine.jsonl  lines moved out of the log
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.lock              the default write lock
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.forgotten         ids ``forget`` deleted, one a line
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.summary.json      counts for listings (derived)
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.usage.json        how each fix was used (derived)
    <DATA_DIR>/fix_memory/<owner-safe>/<project-safe>.sessions.json     sessions that made no entry

A safe name is a readable slug of the raw name plus 12 hex of its SHA-256, so ``a/b`` and ``a_b`` never
share a file, and no raw string (``..``, absolute paths, NUL, 10 kB names, unicode) can address anything
outside ``fix_memory/``: the result only ever holds ``[A-Za-z0-9._-]``, never starts with a dot, and is
at most 61 characters long. Both are taken from the *redacted* name (``store.redact``): a project key
that carries a secret (a CI remote ``https://ci-token:…@gitlab…``) never puts it in a file name, and the
project keeps its files when the token rotates. Names holding no secret are unchanged by this.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from store.errors import InvalidKey
from store.redact import redact

ROOT_DIR_NAME = "fix_memory"
SLUG_MAX_CHARS = 48
HASH_HEX_CHARS = 12
LOG_SUFFIX = ".jsonl"
INDEX_SUFFIX = ".index.json"
INDEX_SEAL_SUFFIX = ".index.json.sha256"  # ``store.persist.fsio.seal_path`` of the index
QUARANTINE_SUFFIX = ".quarantine.jsonl"
LOCK_SUFFIX = ".lock"
FORGOTTEN_SUFFIX = ".forgotten"
SUMMARY_SUFFIX = ".summary.json"
USAGE_SUFFIX = ".usage.json"
SESSIONS_SUFFIX = ".sessions.json"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_EDGE = "._-"


def canonical_key(raw: str) -> str:
    """The name a store keys ``raw`` by: ``raw`` with any secret in it redacted (idempotent)."""
    return redact(raw)


def safe_name(raw: str, *, what: str = "name") -> str:
    """A file-name-safe, collision-free form of ``raw``; raises InvalidKey when ``raw`` is empty."""
    if not raw:
        raise InvalidKey(f"{what} must not be empty")
    key = canonical_key(raw)
    readable = _UNSAFE.sub("_", key).strip(_EDGE)[:SLUG_MAX_CHARS].rstrip(_EDGE)
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_HEX_CHARS]
    return f"{readable}-{digest}" if readable else digest


@dataclass(frozen=True)
class ProjectFiles:
    """The files of one project's log (see the module docstring)."""

    directory: Path
    stem: str

    @cached_property
    def log(self) -> Path:
        """The JSONL fix log."""
        return self.directory / (self.stem + LOG_SUFFIX)

    @cached_property
    def index(self) -> Path:
        """The keyword index ``{id: [keywords...]}``."""
        return self.directory / (self.stem + INDEX_SUFFIX)

    @cached_property
    def index_seal(self) -> Path:
        """The index's seal: the sha256 of the index file's bytes (``fsio.overwrite_with_seal``)."""
        return self.directory / (self.stem + INDEX_SEAL_SUFFIX)

    @cached_property
    def quarantine(self) -> Path:
        """Where torn and malformed lines go, with their reason."""
        return self.directory / (self.stem + QUARANTINE_SUFFIX)

    @cached_property
    def lock(self) -> Path:
        """The sibling file the default write lock flocks."""
        return self.directory / (self.stem + LOCK_SUFFIX)

    @cached_property
    def forgotten(self) -> Path:
        """The ids ``forget`` deleted, so that a replayed turn does not bring its entry back."""
        return self.directory / (self.stem + FORGOTTEN_SUFFIX)

    @cached_property
    def summary(self) -> Path:
        """The log's ``LogSummary`` and which bytes of the log it is of (``store.persist.summary_file``)."""
        return self.directory / (self.stem + SUMMARY_SUFFIX)

    @cached_property
    def usage(self) -> Path:
        """How each fix was used in agent sessions, and which bytes of the log it is of
        (``store.persist.usage_file``)."""
        return self.directory / (self.stem + USAGE_SUFFIX)

    @cached_property
    def sessions(self) -> Path:
        """The project's agent sessions that made no entry, for impact (``store.persist.sessions_file``)."""
        return self.directory / (self.stem + SESSIONS_SUFFIX)


def owner_dir(root: Path, owner: str) -> Path:
    """``root/<owner-safe>``, where ``root`` is ``<DATA_DIR>/fix_memory``."""
    return root / safe_name(owner, what="owner")


def project_files(root: Path, owner: str, project_key: str) -> ProjectFiles:
    """The files of ``(owner, project_key)`` under ``root`` (``<DATA_DIR>/fix_memory``)."""
    return ProjectFiles(owner_dir(root, owner), safe_name(project_key, what="project key"))


def is_log_file(name: str) -> bool:
    """Whether a directory entry is a fix log (not its quarantine, index or lock)."""
    return name.endswith(LOG_SUFFIX) and not name.endswith(QUARANTINE_SUFFIX) and not name.startswith(".")


@lru_cache(maxsize=1 << 16)
def normalize_path(path: str, workspace: str | None = None) -> str:
    """One spelling per file: ``./src/x.py``, ``src/x.py`` and ``<workspace>/src/x.py`` give ``src/x.py``.

    Backslashes become slashes, ``.`` and ``..`` segments are resolved lexically, a trailing slash goes.
    An absolute path outside ``workspace`` (or with no workspace) stays absolute. ``""`` stays ``""``.
    """
    text = path.strip().replace("\\", "/")
    if not text:
        return ""
    normalized = posixpath.normpath(text)
    if workspace:
        root = posixpath.normpath(workspace.strip().replace("\\", "/"))
        if root != "/" and (normalized == root or normalized.startswith(root + "/")):
            normalized = normalized[len(root) + 1 :] or "."
    if normalized.startswith("//"):  # normpath keeps a leading double slash (POSIX allows it)
        normalized = "/" + normalized.lstrip("/")
    return "" if normalized == "." else normalized


def path_suffix_match(a: str, b: str) -> bool:
    """Whether two normalized paths name the same file: equal, or one is a whole-segment tail of the other.

    ``/home/u/app/src/x.py`` matches ``src/x.py`` (an absolute path whose workspace was not known);
    ``src/x.py`` does not match ``rc/x.py``.
    """
    if a == b:
        return bool(a)
    if not a or not b:
        return False
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long.endswith("/" + short.lstrip("/")) and not short.startswith("/")
