"""The agent sessions of a project that made no entry, or whose entries rotation dropped (``store.sessions``),
kept for impact beside the log.

Written under the project's write lock (the worker, once per project per batch; the local publisher; an
append whose rotation drops entries that carry a session's record: ``store.api.appending``);
read without it (the file is replaced atomically). Retention: the newest ``store.sessions.KEPT`` sessions
per project. ``forget`` leaves the file alone: it holds entry ids and session ids, never a fix's text.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from store.api.core import StoreCore
from store.errors import unavailable
from store.paths import SESSIONS_SUFFIX, ProjectFiles, canonical_key, owner_dir
from store.persist.fsio import ensure_dir
from store.persist.sessions_file import join_into, read_sessions
from store.sessions import SessionRecord


class Sessions(StoreCore):
    """``record_sessions``, ``sessions``, ``session_records``, ``session_projects``."""

    def record_sessions(self, owner: str, project_key: str, records: Sequence[SessionRecord]) -> int:
        """Join ``records`` into the project's session records (one atomic, durable rewrite under the
        lock; idempotent); returns the sessions it then holds. Raises InvalidKey, StoreUnavailable."""
        files = self._files(owner, project_key)
        if not records:
            return len(self.sessions(owner, project_key))
        ensure_dir(files.directory)
        project = canonical_key(project_key)
        with self._lock(owner, project_key, files):
            return len(join_into(files.sessions, project, [_in(project, r) for r in records]))

    def sessions(self, owner: str, project_key: str) -> list[SessionRecord]:
        """The project's session records, newest first (none without a file). Raises InvalidKey,
        StoreUnavailable."""
        found = read_sessions(self._files(owner, project_key).sessions)
        return [] if found is None else found[1]

    def session_projects(self, owner: str) -> list[str]:
        """The project keys of ``owner`` that have session records, sorted (by the key each file holds).
        Raises InvalidKey, StoreUnavailable."""
        return sorted(self.session_records(owner))

    def session_records(self, owner: str) -> dict[str, list[SessionRecord]]:
        """The session records of each of ``owner``'s projects that has some, by the project key its file
        holds (one read of each file). Raises InvalidKey, StoreUnavailable."""
        directory = owner_dir(self.root, owner)
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(SESSIONS_SUFFIX))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise unavailable(directory, exc) from exc
        found: dict[str, list[SessionRecord]] = {}
        for name in names:
            read = read_sessions(ProjectFiles(directory, name[: -len(SESSIONS_SUFFIX)]).sessions)
            if read is not None and read[1]:
                found.setdefault(read[0], []).extend(read[1])
        return found


def _in(project: str, record: SessionRecord) -> SessionRecord:
    """``record`` named by the project key the file stores (the redacted one)."""
    if record.project == project:
        return record
    return dataclasses.replace(record, project=project)
