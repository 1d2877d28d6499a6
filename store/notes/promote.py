"""Turning a fix into a note: suggestions as text, the command that promotes one, the fix a person named."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from store import FixEntry, FixStore
from store.notes.suggest import Suggestion


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


def suggestion_lines(
    found: Sequence[Suggestion], project: str, read: int, command_of: Callable[[Suggestion], str]
) -> list[str]:
    """``fixmem notes suggest``'s text: each suggestion, why, its evidence and its promote command."""
    if not found:
        return [f"no suggestions for {project!r} ({read} entries read; nothing was written)"]
    lines = [f"{len(found)} suggestion(s) for {project!r} (read-only; nothing was written):"]
    for number, item in enumerate(found, start=1):
        lines += [
            f"\n{number}. {item.kind}: {item.subject}",
            f"   why: {item.reason}",
            f"   evidence: {', '.join(item.evidence)}",
            f"   promote: {command_of(item)}",
        ]
    return lines
