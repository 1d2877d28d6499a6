"""The backfill's rate limit, pure: a token bucket over events; the caller sleeps what ``take`` returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ingest.backfill.records import BackfillError

__all__ = ["TokenBucket"]


@dataclass
class TokenBucket:
    """Rate limit over events: ``rate`` per second on average, bursts up to ``burst``; rate 0 = no limit.

    ``take(n, now)`` spends ``n`` tokens and returns how long (seconds) the caller must wait before sending;
    a take larger than the bucket is allowed and paid for by waiting longer (the debt carries over).
    """

    rate: float
    burst: float = 0.0
    tokens: float = field(default=math.nan)
    last: float | None = None

    def __post_init__(self) -> None:
        if self.rate < 0 or not math.isfinite(self.rate):
            raise BackfillError(f"--rate {self.rate}: expected events per second >= 0 (0: no limit)")
        self.burst = self.burst or max(1.0, self.rate)
        if math.isnan(self.tokens):
            self.tokens = self.burst

    def take(self, n: int, now: float) -> float:
        """Spend ``n`` tokens at time ``now``; returns the wait in seconds (0 when within the rate)."""
        if self.rate == 0:
            return 0.0
        if self.last is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= n
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate
