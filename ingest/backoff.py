"""Capped exponential backoff for reconnect loops (pure: it only computes delays)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Backoff:
    """Delays ``initial, initial*factor, …`` up to ``cap`` seconds; ``reset()`` after a success."""

    initial: float = 0.5
    factor: float = 2.0
    cap: float = 10.0
    failures: int = 0

    def next(self) -> float:
        """The delay before the next attempt, in seconds; counts one more failure."""
        delay = min(self.cap, self.initial * self.factor**self.failures)
        self.failures += 1
        return delay

    def reset(self) -> None:
        """Forget past failures (call after a success)."""
        self.failures = 0
