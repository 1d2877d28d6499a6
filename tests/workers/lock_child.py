"""A child process for the lock tests: ``python -m tests.workers.lock_child MODE URL PATH N TAG``.

``counter``: N times, under the project's Redis lease lock, read an integer from PATH, wait, write it + 1.
``append``: append N entries (ids from TAG) to one project of the store at PATH with the Redis lock.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import redis

from store import FixStore
from store.entry import FixEntry, entry_id
from tests import configs
from workers.locks import redis_lock_factory


def counter(url: str, path: Path, n: int) -> None:
    factory = redis_lock_factory(redis.Redis.from_url(url), lease=2.0, wait=60.0)
    for _ in range(n):
        with factory("owner", "project"):
            value = int(path.read_text() or "0")
            time.sleep(0.002)  # widen the window a missing lock would let another writer into
            path.write_text(str(value + 1))


def _default_lock(url: str) -> Callable[[str, str], AbstractContextManager[object]]:
    """The project lock of the default settings."""
    lease, wait = configs.DEFAULTS.lock_lease_seconds, configs.DEFAULTS.lock_wait_seconds
    return redis_lock_factory(redis.Redis.from_url(url), lease=lease, wait=wait)


def append(url: str, data_dir: Path, n: int, tag: str) -> None:
    store = FixStore(data_dir, cap=100_000, lock_factory=_default_lock(url))
    for i in range(n):
        event = f"{tag}-{i}"
        entry = FixEntry(
            id=entry_id("owner", "project", event), ts=1700000000.0 + i, project="project",
            task=f"task {event}", files=[f"src/{tag}.py"], symbols=[], errors=[], tests=None,
            outcome="unverified", solution="changed it", tags=[], event_id=event,
        )  # fmt: skip
        store.append("owner", "project", [entry])


if __name__ == "__main__":
    mode, url, path, count = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    if mode == "counter":
        counter(url, path, count)
    else:
        append(url, path, count, sys.argv[5])
