"""The token bucket of ``--rate``: a table, and a property over any run of takes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.backfill.rate import TokenBucket
from ingest.backfill.records import BackfillError


@pytest.mark.parametrize(
    ("rate", "takes", "waits"),
    [
        (0, [(1000, 0.0), (1000, 0.0)], [0.0, 0.0]),  # no limit
        (10, [(10, 0.0), (10, 0.0)], [0.0, 1.0]),  # a full bucket, then one second of debt
        (10, [(10, 0.0), (10, 1.0)], [0.0, 0.0]),  # refilled after a second
        (10, [(5, 0.0), (5, 0.2), (5, 0.4)], [0.0, 0.0, 0.1]),  # 10 - 5 + 2 - 5 + 2 - 5 = -1 token
        (100, [(500, 0.0)], [4.0]),  # bigger than the bucket: pay by waiting
    ],
)
def test_token_bucket_table(rate: float, takes: list[tuple[int, float]], waits: list[float]) -> None:
    bucket = TokenBucket(rate)
    assert [bucket.take(n, now) for n, now in takes] == pytest.approx(waits)


@given(
    st.floats(min_value=0.5, max_value=5000),
    st.lists(st.tuples(st.integers(1, 500), st.floats(min_value=0, max_value=2)), min_size=1, max_size=40),
)
def test_a_caller_that_waits_as_told_never_beats_the_rate(
    rate: float, steps: list[tuple[int, float]]
) -> None:
    """Over any run, events sent by time t <= burst + rate * t (the caller sends after each wait)."""
    bucket = TokenBucket(rate)
    now = sent = 0.0
    for n, pause in steps:
        now += pause
        now += bucket.take(n, now)
        sent += n
        assert sent <= bucket.burst + rate * now + 1e-6 * sent


@pytest.mark.parametrize("rate", [-1.0, float("inf"), float("nan")])
def test_a_nonsense_rate_is_refused(rate: float) -> None:
    with pytest.raises(BackfillError, match="--rate"):
        TokenBucket(rate)
