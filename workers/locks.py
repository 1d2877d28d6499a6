"""A Redis lease lock per project, held around each store write, for workers on several hosts.

flock is not trustworthy on network filesystems, so when workers share ``DATA_DIR`` over a network
volume every writer of a project takes ``fixmem:lock:project:<digest>`` instead (``store_lock=redis``).
The lease is short (default 10 s) so a SIGKILLed holder frees the project quickly, and one renewal thread
per process (``_Renewer``, started on first use) renews every held lease each third of it while the write
runs, so a slow write keeps it. If a renewal finds the lease gone (the holder was paused longer than the
lease), the write is reported as failed (``LockLost``) and the job is retried; entries are idempotent by
id, so the retry cannot duplicate them.

One thread per process, not one per lock use: starting and joining a thread around every store write
was a measurable cost per append (docs/performance.md, "Figures behind comments in the code").

All writers of one data directory must use the same kind of lock: build stores through
``fixmem.wiring`` rather than by hand.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType

import redis
from redis.lock import Lock

from ingest import keys
from workers.errors import LockLost, LockTimeout

log = logging.getLogger("fixmem.workers.locks")


class _Renewer:
    """The process's one renewal thread: renews each registered lock every third of its lease."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[RedisLeaseLock, float] = {}  # lock -> monotonic time of its next renewal
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, lock: RedisLeaseLock) -> None:
        """Renew ``lock`` from now on (starts the thread on first use, and again after a fork)."""
        with self._cond:
            self._due[lock] = time.monotonic() + lock.lease / 3
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="lease-lock renewer", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove(self, lock: RedisLeaseLock) -> None:
        """Stop renewing ``lock``; returns once no renewal of it is in flight."""
        with self._cond:
            self._due.pop(lock, None)
        with lock.renewing:  # a renewal that started before the removal finishes first
            pass

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [lock for lock, at in self._due.items() if at <= now]
                if not due:
                    wait = min(self._due.values(), default=now + 60.0) - now
                    self._cond.wait(wait)
                    continue
                for lock in due:
                    self._due[lock] = now + lock.lease / 3
            for lock in due:
                with lock.renewing:
                    with self._cond:
                        if lock not in self._due:  # released meanwhile
                            continue
                    if not lock.renew():
                        with self._cond:
                            self._due.pop(lock, None)


_renewer = _Renewer()


class RedisLeaseLock:
    """Context manager: hold ``key`` for ``lease`` seconds at a time, renewed until exit."""

    def __init__(self, client: redis.Redis, key: str, *, lease: float, wait: float) -> None:
        self.key = key
        self.lease = lease
        self.wait = wait
        self._lock = Lock(client, key, timeout=lease, sleep=0.02, blocking_timeout=wait, thread_local=False)
        self._lost = threading.Event()
        self.renewing = threading.Lock()  # held by the renewer while it renews this lock

    def __enter__(self) -> RedisLeaseLock:
        if not self._lock.acquire():
            raise LockTimeout(f"project lock {self.key} still held by another writer after {self.wait:g}s")
        _renewer.add(self)
        return self

    def renew(self) -> bool:
        """Extend the lease to ``lease`` seconds from now; False when it was lost (reported on exit)."""
        try:
            self._lock.reacquire()
        except redis.exceptions.LockNotOwnedError:
            self._lost.set()
            log.error("lost project lock %s: its lease lapsed during the write", self.key)
            return False
        except redis.exceptions.RedisError as exc:  # keep trying until the lease itself runs out
            log.warning("could not renew project lock %s: %s", self.key, exc)
        return True

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _renewer.remove(self)
        try:
            self._lock.release()
        except redis.exceptions.LockNotOwnedError:
            self._lost.set()
        except redis.exceptions.RedisError as error:
            log.warning("could not release project lock %s (it expires by itself): %s", self.key, error)
        if self._lost.is_set() and exc_type is None:
            raise LockLost(f"project lock {self.key} lapsed before the write finished; the job will retry")


def redis_lock_factory(
    client: redis.Redis, *, lease: float, wait: float
) -> Callable[[str, str], AbstractContextManager[object]]:
    """A ``FixStore`` lock factory: ``factory(owner, project_key)`` -> a ``RedisLeaseLock``.

    ``lease`` and ``wait``: seconds (fixmem's ``lock_lease_seconds`` and ``lock_wait_seconds``).
    """

    def factory(owner: str, project_key: str) -> AbstractContextManager[object]:
        return RedisLeaseLock(client, keys.project_lock(owner, project_key), lease=lease, wait=wait)

    return factory
