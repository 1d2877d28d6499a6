"""Errors raised by ``workers`` (outside the pure extraction core). The tree:

- WorkerError: root of everything this package raises.
  - NotConfigured: a job ran in a process where no ``WorkerContext`` was installed.
  - LockTimeout: a project's lock stayed held by another writer past the wait (transient: retried).
  - LockLost: a project's lease lapsed while its write ran (transient: retried; entries are idempotent).
"""

from __future__ import annotations


class WorkerError(Exception):
    """Raised for any failure inside ``workers``; the root of this package's exceptions."""


class NotConfigured(WorkerError):
    """Raised when a job runs in a process without an installed ``WorkerContext`` (use ``fixmem worker``)."""


class LockTimeout(WorkerError):
    """Raised when a project's lock is still held by another writer after the wait."""


class LockLost(WorkerError):
    """Raised when a project's lease lapsed while its write ran."""
