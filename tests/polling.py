"""Waiting in tests: poll a condition until it holds or a deadline passes, never ``sleep(n)`` and hope."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], object], timeout: float, what: str, *, every: float = 0.05) -> float:
    """Poll ``predicate`` until truthy; returns the seconds it took. Raises AssertionError on timeout."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f}s")
        time.sleep(every)
    return time.monotonic() - started
