"""Which project key each owner's workspaces stand for, as seen in events: ``?workspace=`` of the API; and
the other way, which checkout on this machine stands for a project (``resolve_workspace``).

The consumer records, per owner, ``workspace -> project_key`` of the events it validates (newest wins) in
the hash ``fixmem:workspaces:<owner>``, in the same MULTI/EXEC as the jobs; the API reads it to turn a
workspace path into the key its events were stored under (``github.com/acme/widgets``), without reading
the caller's files. A pair whose workspace is its own key is not recorded (the path is the key then), and
an owner's hash holds at most ``MAX_WORKSPACES`` workspaces: the ones past it are not recorded (ephemeral
CI checkouts must not grow Redis without bound), and the API falls back to the workspace itself.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import redis

from ingest import keys
from ingest.connection import reply_text
from ingest.project_key import project_key_for

MAX_WORKSPACES = 10_000

# KEYS[1] the owner's hash; ARGV[1] the cap, then workspace, key pairs. A known workspace is updated; a new
# one is added while the hash holds fewer than the cap.
_RECORD = """
local cap = tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  if redis.call('HLEN', KEYS[1]) < cap or redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 0
"""


def pairs_of(events: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, str]]:
    """owner -> {workspace: project key} of ``(owner, workspace, project key)`` triples, the last one
    winning; pairs without a workspace, or whose workspace is the key, left out."""
    found: dict[str, dict[str, str]] = {}
    for owner, workspace, key in events:
        if workspace and workspace != key:
            found.setdefault(owner, {})[workspace] = key
    return found


def record(
    pipe: redis.client.Pipeline, pairs: Mapping[str, Mapping[str, str]], *, cap: int = MAX_WORKSPACES
) -> None:
    """Queue the recording of ``pairs`` (owner -> {workspace: key}) on ``pipe`` (one script per owner)."""
    for owner, mapping in pairs.items():
        args = [str(cap)] + [value for pair in mapping.items() for value in pair]
        pipe.eval(_RECORD, 1, keys.workspaces(owner), *args)


def project_key_of(client: redis.Redis, owner: str, workspace: str) -> str | None:
    """The project key the events of ``owner`` in ``workspace`` carried last, or None when none was seen.

    Raises redis errors.
    """
    found = client.hget(keys.workspaces(owner), workspace)
    return reply_text(found) if found is not None else None


def workspaces_of(client: redis.Redis, owner: str, project_key: str) -> list[str]:
    """The workspaces whose events of ``owner`` carried ``project_key`` last, sorted. Raises redis errors."""
    mapping = client.hgetall(keys.workspaces(owner))
    return sorted(reply_text(w) for w, k in mapping.items() if reply_text(k) == project_key)


def resolve_workspace(
    project: str,
    *,
    given: Path | None,
    cwd: str,
    recorded: Callable[[], Iterable[str]],
    key_of: Callable[[str], str] = project_key_for,
) -> tuple[str | None, str]:
    """The checkout of ``project`` to check recalled files against, and where it came from (for a start-up
    line): ``given`` (a flag or ``FIXMEM_WORKSPACE``); ``cwd`` when it is a checkout of the project (its
    key is the project's); a ``recorded`` workspace (``workspaces_of``: where the owner's events of the
    project came from) that is a checkout of it here; else None, and files are not checked at all (an MCP
    client starts its servers in its own directory: taking it marked every recalled fix "file gone")."""
    if given is not None:
        return str(given.absolute()), "--workspace / FIXMEM_WORKSPACE"
    if key_of(cwd) == project:
        return cwd, "the current directory"
    with contextlib.suppress(Exception):  # a Redis that does not answer: no recorded workspace then
        for candidate in recorded():
            if os.path.isdir(candidate) and key_of(candidate) == project:
                return candidate, "where the project's events came from"
    return None, f"none: {cwd} is not a checkout of it, so recalled files are not checked (pass --workspace)"
