"""A Redis lease lock per project, held around each store write, for workers on several hosts.

flock is not trustworthy on network filesystems, so when workers share ``DATA_DIR`` over a network
volume every writer of a project takes ``fixmem:lock:project:<digest>`` instead (``store_lock=redis``).
The lease is short (default 10 s) so a SIGKILLed holder frees the project quickly, and a thread renews
it every third of the lease while the write runs, so a slow write keeps it. If a renewal finds the lease
gone (the holder was paused longer than the lease), the write is reported as failed (``LockLost``) and
the job is retried; entries are idempotent by id, so the retry cannot duplicate them.

All writers of one data directory must use the same kind of lock: build stores through
``fixmem.wiring`` rather than by hand.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType

import redis
from redis.lock import Lock

from ingest import keys
from workers.errors import LockLost, LockTimeout

log = logging.getLogger("fixmem.workers.locks")


class RedisLeaseLock:
    """Context manager: hold ``key`` for ``lease`` seconds at a time, renewed until exit."""

    def __init__(self, client: redis.Redis, key: str, *, lease: float, wait: float) -> None:
        self.key = key
        self.lease = lease
        self.wait = wait
        self._lock = Lock(client, key, timeout=lease, sleep=0.02, blocking_timeout=wait, thread_local=False)
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._renewer: threading.Thread | None = None

    def __enter__(self) -> RedisLeaseLock:
        if not self._lock.acquire():
            raise LockTimeout(f"project lock {self.key} still held by another writer after {self.wait:g}s")
        self._renewer = threading.Thread(target=self._renew, name=f"renew {self.key}", daemon=True)
        self._renewer.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                self._lock.reacquire()
            except redis.exceptions.LockNotOwnedError:
                self._lost.set()
                log.error("lost project lock %s: its lease lapsed during the write", self.key)
                return
            except redis.exceptions.RedisError as exc:  # keep trying until the lease itself runs out
                log.warning("could not renew project lock %s: %s", self.key, exc)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        try:
            self._lock.release()
        except redis.exceptions.LockNotOwnedError:
            self._lost.set()
        except redis.exceptions.RedisError as error:
            log.warning("could not release project lock %s (it expires by itself): %s", self.key, error)
        if self._lost.is_set() and exc_type is None:
            raise LockLost(f"project lock {self.key} lapsed before the write finished; the job will retry")


def redis_lock_factory(
    client: redis.Redis, *, lease: float = 10.0, wait: float = 60.0
) -> Callable[[str, str], AbstractContextManager[object]]:
    """A ``FixStore`` lock factory: ``factory(owner, project_key)`` -> a ``RedisLeaseLock``."""

    def factory(owner: str, project_key: str) -> AbstractContextManager[object]:
        return RedisLeaseLock(client, keys.project_lock(owner, project_key), lease=lease, wait=wait)

    return factory
