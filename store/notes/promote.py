"""Turning a fix into a note: find the fix a person named, and the command line that promotes a suggestion."""

from __future__ import annotations

import shlex

from store import FixEntry, FixStore


def find_fix(store: FixStore, owner: str, project: str | None, fix_id: str) -> FixEntry | None:
    """The entry ``fix_id`` of ``project`` (None: of any project of ``owner``), or None.

    Raises StoreError when a log cannot be read.
    """
    keys = [project] if project is not None else store.projects(owner)
    for key in keys:
        for entry in store.read(owner, key).entries:
            if entry.id == fix_id:
                return entry
    return None


def promote_command(
    fix_id: str, kind: str, *, project: str, owner: str, data_dir: str | None, workspace: str | None
) -> str:
    """The ``fixmem notes promote`` command line for a suggestion, quoted for a POSIX shell.

    It names the same owner, project, data directory and workspace that ``notes suggest`` read; pass
    them resolved (``workspace`` None: the current directory, left out).
    """
    argv = ["fixmem", "notes", "promote", fix_id, "--kind", kind, "--project", project, "--owner", owner]
    if data_dir:
        argv += ["--data-dir", data_dir]
    if workspace is not None:
        argv += ["--workspace", workspace]
    return shlex.join(argv)
