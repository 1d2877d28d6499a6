"""File paths as stored: relative to the workspace, normalized, and never scratch locations.

Pure. ``PathResolver.resolve`` answers the one question every file source asks: "this path, written from
this working directory: which project file is it?" — or ``None`` for ``/dev/null``, temp dirs, paths
outside the workspace, globs and shell variables.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache

# Absolute prefixes that never hold project files.
_SCRATCH_PREFIXES = ("/dev/", "/proc/", "/sys/", "/tmp/", "/var/tmp/", "/private/tmp/", "/run/")
_SCRATCH_EXACT = {"/dev/null", "/tmp", "/var/tmp", "NUL", "nul"}
_UNRESOLVABLE = re.compile(r"[*?\[\]{}$`<>|;&\x00\n]|^~|^-")
_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]")


@dataclass(frozen=True)
class PathResolver:
    """Resolves written paths against the workspace (absolute, or empty when unknown)."""

    workspace: str = ""

    @classmethod
    def for_event(cls, workspace: str, project_key: str) -> PathResolver:
        """The workspace, else the project key, whichever first is an absolute path; else none.

        A workspace that is not an absolute path (a URL, a relative name) is no root to join paths to:
        joined and normalized, ``https://ci:<token>@host/repo`` became ``https:/ci:<token>@host/repo/x.py``,
        a "file" that no redaction rule recognises any more.
        """
        root = next((r for r in (workspace, project_key) if r.startswith("/")), "")
        root = posixpath.normpath(root) if root else ""
        return cls(workspace="" if root in {"", "/", "."} else root)

    def absolute(self, path: str, cwd: str | None = None) -> str:
        """``path`` joined to ``cwd`` (or the workspace) and normalized; relative when neither is known."""
        path = path.strip().strip("\"'")
        base = cwd or self.workspace
        joined = path if path.startswith("/") or not base else posixpath.join(base, path)
        return posixpath.normpath(joined) if joined else joined

    def resolve(self, path: str, cwd: str | None = None) -> str | None:
        """The project-relative form of ``path``, or ``None`` when it is not a project file."""
        return _resolve(self.workspace, path, cwd)


@lru_cache(maxsize=8192)
def _resolve(workspace: str, path: str, cwd: str | None) -> str | None:
    """``PathResolver(workspace).resolve(path, cwd)``, memoized: a turn resolves its paths several times
    (an op, its symbols, a read's window) and a worker sees the same few paths again and again."""
    path = path.strip().strip("\"'").replace("\\ ", " ")
    if not path or _UNRESOLVABLE.search(path) or _WINDOWS_ABS.match(path):
        return None
    full = PathResolver(workspace).absolute(path, cwd)
    root = workspace.rstrip("/")
    if workspace and full.startswith(root + "/"):
        # Inside the project, even when the project itself lives under /tmp (a sandbox's checkout):
        # scratch directories are scratch only outside it.
        full = full[len(root) + 1 :]
    elif full in _SCRATCH_EXACT or full.startswith(_SCRATCH_PREFIXES):
        return None
    elif full.startswith("/"):
        return None if workspace else full
    if full in {"", ".", ".."} or full.startswith("../") or full.endswith("/"):
        return None
    return full
