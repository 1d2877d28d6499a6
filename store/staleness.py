"""Staleness marks: is a recalled fix still about code that exists? Pure, except ``workspace_checker``.

An entry whose ``commit`` is not in a non-empty set of known commits is marked ``stale: commit gone``; an
entry whose files are missing under the workspace is marked ``stale: file gone: …``. Marked, never
dropped. An empty or absent set of commits, or no workspace, means nothing was checked: no mark.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection

from store.entry import FixEntry

COMMIT_PREFIX = 7  # a short sha matches its full form


def commit_gone(commit: str | None, known_commits: Collection[str] | None) -> bool:
    """Whether ``commit`` is absent from a non-empty ``known_commits`` (short and full shas match)."""
    if not known_commits or not commit:
        return False
    if commit in known_commits:
        return False
    head = commit[:COMMIT_PREFIX]
    return not any(
        k[:COMMIT_PREFIX] == head and (k.startswith(commit) or commit.startswith(k)) for k in known_commits
    )


def stale_marks(
    entry: FixEntry,
    *,
    known_commits: Collection[str] | None = None,
    file_exists: Callable[[str], bool] | None = None,
) -> tuple[str, ...]:
    """``stale: …`` marks of an entry. Pure: ``file_exists`` is asked about each file (None: not checked)."""
    marks: list[str] = []
    if commit_gone(entry.commit, known_commits):
        marks.append("stale: commit gone")
    if file_exists is not None:
        gone = [f for f in entry.files if f and not file_exists(f)]
        if gone:
            marks.append("stale: file gone: " + ", ".join(gone[:2]) + (" …" if len(gone) > 2 else ""))
    return tuple(marks)


def workspace_checker(workspace: str | None) -> Callable[[str], bool] | None:
    """A ``file_exists`` for ``stale_marks`` that looks under ``workspace`` (None when no workspace)."""
    if not workspace:
        return None
    root = os.path.abspath(workspace)

    def exists(path: str) -> bool:
        return os.path.lexists(os.path.join(root, path))

    return exists
