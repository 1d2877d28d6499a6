"""Job functions for worker tests (RQ imports jobs by path, so they live in a module)."""

from __future__ import annotations

import time

import redis


def record(url: str, key: str, value: str) -> str:
    """Append ``value`` to the list ``key``."""
    redis.Redis.from_url(url).rpush(key, value)
    return value


def slow_record(url: str, key: str, value: str, seconds: float) -> str:
    """Mark ``key:started``, sleep, then append ``value`` to ``key``."""
    client = redis.Redis.from_url(url)
    client.rpush(f"{key}:started", value)
    time.sleep(seconds)
    client.rpush(key, value)
    return value


def fail(message: str) -> None:
    """Always raise."""
    raise RuntimeError(message)


def record_threads(url: str, key: str) -> None:
    """Append the names of this process's lease threads (``lease …``) to the list ``key``."""
    import threading  # noqa: PLC0415 - only this helper needs it

    names = sorted(t.name for t in threading.enumerate() if t.name.startswith("lease "))
    redis.Redis.from_url(url).rpush(key, ",".join(names))
