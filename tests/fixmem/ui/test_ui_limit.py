"""Failed logins per client address (``fixmem.ui.limit``), on an injected clock."""

from __future__ import annotations

import pytest

from fixmem.ui.limit import LoginLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_nth_failure_in_the_window_refuses_until_the_oldest_leaves_it() -> None:
    clock = Clock()
    limiter = LoginLimiter(3, 60.0, clock=clock)
    for _ in range(2):
        limiter.failed("a")
        clock.now += 10
    assert limiter.retry_after("a") is None  # 2 failures: may try again
    limiter.failed("a")  # at 1020: the third within 60 s
    assert limiter.retry_after("a") == 40  # the first (at 1000) leaves the window at 1060
    assert limiter.retry_after("b") is None
    clock.now = 1059.5
    assert limiter.retry_after("a") == 1
    clock.now = 1060.0
    assert limiter.retry_after("a") is None  # two left in the window
    limiter.failed("a")
    assert limiter.retry_after("a") == 10  # 1010, 1020, 1060: refused until 1070


def test_a_success_clears_and_old_failures_are_dropped() -> None:
    clock = Clock()
    limiter = LoginLimiter(2, 60.0, clock=clock)
    limiter.failed("a")
    limiter.succeeded("a")
    limiter.failed("a")
    assert limiter.retry_after("a") is None
    clock.now += 61
    limiter.failed("a")
    assert limiter.retry_after("a") is None  # the first is out of the window
    assert len(limiter) == 1


def test_the_addresses_tracked_are_bounded() -> None:
    clock = Clock()
    limiter = LoginLimiter(1, 60.0, clock=clock, max_clients=3)
    for n in range(5):
        limiter.failed(f"10.0.0.{n}")
    assert len(limiter) == 3
    assert limiter.retry_after("10.0.0.0") is None and limiter.retry_after("10.0.0.4") == 60


@pytest.mark.parametrize(("failures", "window"), [(0, 60.0), (3, 0.0)])
def test_a_limit_that_allows_nothing_is_refused(failures: int, window: float) -> None:
    with pytest.raises(ValueError, match="max_failures"):
        LoginLimiter(failures, window)
