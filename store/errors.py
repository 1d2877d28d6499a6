"""Errors raised by ``store``. The tree:

- StoreError: root of everything this package raises.
  - StoreUnavailable: the data directory cannot be read or written (permissions, ENOSPC, not a
    directory); the message names the path.
  - InvalidKey: an owner or project key is empty (also a ``ValueError``).
  - InvalidEntry: an entry does not belong in the log it was given to (also a ``ValueError``).
"""

from __future__ import annotations

import errno
import os


class StoreError(Exception):
    """Raised for any failure inside ``store``; the root of this package's exceptions."""


class StoreUnavailable(StoreError):
    """Raised when a store file or directory cannot be read or written; ``path`` names it."""

    def __init__(self, path: str | os.PathLike[str], message: str, *, errno_code: int | None = None) -> None:
        super().__init__(f"{os.fspath(path)}: {message}")
        self.path = os.fspath(path)
        self.errno = errno_code


class InvalidKey(StoreError, ValueError):
    """Raised when an owner or project key is empty."""


class InvalidEntry(StoreError, ValueError):
    """Raised when an entry's ``project`` differs from the project key it is appended under."""


def unavailable(path: str | os.PathLike[str], exc: OSError) -> StoreUnavailable:
    """Translate an ``OSError`` on ``path`` into ``StoreUnavailable`` with a readable reason."""
    reason = {
        errno.ENOSPC: "no space left on device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EROFS: "read-only file system",
        errno.ENOTDIR: "a path component is not a directory",
        errno.EISDIR: "is a directory",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    return StoreUnavailable(path, reason, errno_code=exc.errno)
