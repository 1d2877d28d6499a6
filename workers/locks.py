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
import uuid
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
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
        self._due: dict[RedisLeaseLock | _HeldGroup, float] = {}  # lock -> monotonic time of its next renewal
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, lock: RedisLeaseLock | _HeldGroup) -> None:
        """Renew ``lock`` from now on (starts the thread on first use, and again after a fork)."""
        with self._cond:
            self._due[lock] = time.monotonic() + lock.lease / 3
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="lease-lock renewer", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove(self, lock: RedisLeaseLock | _HeldGroup) -> None:
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


# KEYS: the project lock keys; ARGV: the token, the lease (ms). All or none: 1 when every key was free.
_ACQUIRE_ALL = """
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do redis.call('SET', key, ARGV[1], 'PX', ARGV[2]) end
return 1
"""

# KEYS: the keys; ARGV: the token, then (renew) the lease in ms. Returns how many keys the token still held.
_RENEW_ALL = """
local held = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('PEXPIRE', key, ARGV[2]); held = held + 1 end
end
return held
"""

_RELEASE_ALL = """
local held = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key); held = held + 1 end
end
return held
"""


class _HeldGroup:
    """Several project leases under one token, renewed and released together (``ProjectLocks.holding``)."""

    def __init__(self, client: redis.Redis, lock_keys: list[str], token: str, lease: float) -> None:
        self.client, self.keys, self.token, self.lease = client, lock_keys, token, lease
        self.renewing = threading.Lock()  # held by the renewer while it renews the group
        self.lost = False

    def acquire(self) -> bool:
        ms = str(max(1, int(self.lease * 1000)))
        return bool(self.client.eval(_ACQUIRE_ALL, len(self.keys), *self.keys, self.token, ms))

    def renew(self) -> bool:
        ms = str(max(1, int(self.lease * 1000)))
        try:
            held = int(self.client.eval(_RENEW_ALL, len(self.keys), *self.keys, self.token, ms))
        except redis.exceptions.RedisError as exc:  # keep trying until the leases themselves run out
            log.warning("could not renew %d project locks: %s", len(self.keys), exc)
            return True
        if held < len(self.keys):
            self.lost = True
            log.error(
                "lost %d of %d project locks: their lease lapsed", len(self.keys) - held, len(self.keys)
            )
            return False
        return True

    def release(self) -> None:
        try:
            held = int(self.client.eval(_RELEASE_ALL, len(self.keys), *self.keys, self.token))
        except redis.exceptions.RedisError as error:
            log.warning(
                "could not release %d project locks (they expire by themselves): %s", len(self.keys), error
            )
            return
        self.lost = self.lost or held < len(self.keys)


class ProjectLocks:
    """The workers' ``FixStore`` lock factory: ``locks(owner, project_key)`` -> a ``RedisLeaseLock``,
    except for the projects this thread holds already through ``holding`` (then nothing more to take).

    ``lease`` and ``wait``: seconds (fixmem's ``lock_lease_seconds`` and ``lock_wait_seconds``).
    """

    def __init__(self, client: redis.Redis, *, lease: float, wait: float) -> None:
        self.client, self.lease, self.wait = client, lease, wait
        self._local = threading.local()

    def __call__(self, owner: str, project_key: str) -> AbstractContextManager[object]:
        key = keys.project_lock(owner, project_key)
        if key in getattr(self._local, "held", ()):
            return nullcontext()
        return RedisLeaseLock(self.client, key, lease=self.lease, wait=self.wait)

    @contextmanager
    def holding(self, projects: Iterable[tuple[str, str]]) -> Iterator[bool]:
        """Take the locks of every ``(owner, project_key)`` in one round trip, all or none, and release
        them in one; yields whether it got them. A batch's appends to many projects then cost two round
        trips instead of two per project. When any is held elsewhere it takes none (yields False): each
        write then takes its own lock, waiting for it as before, so no writer ever waits while holding.
        Raises LockLost on exit when a lease lapsed inside (the job is retried; entries are idempotent).
        """
        lock_keys = sorted({keys.project_lock(owner, project) for owner, project in projects})
        group = _HeldGroup(self.client, lock_keys, uuid.uuid4().hex, self.lease)
        if len(lock_keys) < 2 or not group.acquire():
            yield False
            return
        _renewer.add(group)
        self._local.held = frozenset(lock_keys)
        failed = False
        try:
            yield True
        except BaseException:
            failed = True
            raise
        finally:
            self._local.held = frozenset()
            _renewer.remove(group)
            group.release()
            if group.lost and not failed:
                raise LockLost(f"{len(lock_keys)} project locks lapsed before the batch's writes finished")


def redis_lock_factory(client: redis.Redis, *, lease: float, wait: float) -> ProjectLocks:
    """A ``FixStore`` lock factory of Redis lease locks (``ProjectLocks``)."""
    return ProjectLocks(client, lease=lease, wait=wait)
