"""Which checkout ``fixmem mcp`` checks recalled files against, and the line it prints about it at start.

An MCP client often starts its servers in its own directory, not the project's checkout: taking the
current directory then marked every recalled fix "stale: file gone". The workspace is, in order:
``--workspace`` / ``FIXMEM_WORKSPACE``; the current directory when it is a checkout of the project (its
key is the project's); a workspace the owner's events of that project came from (recorded by the
consumer, ``ingest.workspaces``) that is a checkout of the project on this machine; else none, and files
are not checked at all (better than calling every file gone).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ingest.project_key import project_key_for


def resolve_workspace(
    project: str,
    *,
    given: Path | None,
    cwd: str,
    recorded: Callable[[], Iterable[str]],
    key_of: Callable[[str], str] = project_key_for,
) -> tuple[str | None, str]:
    """The workspace for ``project`` and where it came from (for the start-up line); see the module."""
    if given is not None:
        return str(given.absolute()), "--workspace / FIXMEM_WORKSPACE"
    if key_of(cwd) == project:
        return cwd, "the current directory"
    with contextlib.suppress(Exception):  # a Redis that does not answer: no recorded workspace then
        for candidate in recorded():
            if os.path.isdir(candidate) and key_of(candidate) == project:
                return candidate, "where the project's events came from"
    return None, f"none: {cwd} is not a checkout of it, so recalled files are not checked (pass --workspace)"


def start_line(owner: str, project: str, fixes: int, workspace: str | None, why: str) -> str:
    """What ``fixmem mcp`` prints on stderr at start: whose memory, which project, which checkout."""
    where = f"workspace {workspace} ({why})" if workspace else f"workspace {why}"
    return f"fixmem mcp: owner {owner}, project {project} ({fixes} fixes), {where}"
