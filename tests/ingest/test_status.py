"""ingest.status: the lag figure (pure table + a model of a stream), and stream_status on a real Redis."""

from __future__ import annotations

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from ingest.status import Lag, group_lag, stream_status


@pytest.mark.parametrize(
    ("length", "pending", "last_delivered", "first_id", "last_generated", "server_lag", "expected"),
    [
        (10, 3, "5-0", "1-0", "10-0", 4, Lag(4, True)),  # Redis >= 7 says it
        (0, 0, "0-0", None, "0-0", None, Lag(0, True)),  # empty stream
        (7, 2, "10-0", "4-0", "10-0", None, Lag(0, True)),  # caught up: acked-but-untrimmed do not count
        (5, 0, "3-0", "4-0", "8-0", None, Lag(5, True)),  # nothing delivered left in the stream
        (5, 0, "0-0", "1-0", "5-0", None, Lag(5, True)),  # a new group
        (8, 3, "5-0", "3-0", "10-0", None, Lag(5, False)),  # delivered ones still there: XLEN - pending
        (3, 5, "5-0", "1-0", "10-0", None, Lag(1, False)),  # pending over the cap's cut: at least one
    ],
)
def test_group_lag_table(
    length: int,
    pending: int,
    last_delivered: str,
    first_id: str | None,
    last_generated: str,
    server_lag: int | None,
    expected: Lag,
) -> None:
    got = group_lag(
        length=length,
        pending=pending,
        last_delivered=last_delivered,
        first_id=first_id,
        last_generated=last_generated,
        server_lag=server_lag,
    )
    assert got == expected


@st.composite
def streams(draw: st.DrawFn) -> tuple[int, int, set[int], int]:
    """A stream of ids 1..n: the group was delivered 1..d, acked some, and 1..t were trimmed (t never
    passes the oldest pending entry, as the consumer's trim guarantees)."""
    n = draw(st.integers(0, 60))
    d = draw(st.integers(0, n))
    acked = draw(st.sets(st.integers(1, d), max_size=d)) if d else set()
    pending = set(range(1, d + 1)) - acked
    floor = min(pending) - 1 if pending else d
    t = draw(st.integers(0, floor))
    return n, d, acked, t


@given(streams())
def test_the_estimate_is_exact_or_high_by_at_most_the_acked_untrimmed(
    stream: tuple[int, int, set[int], int],
) -> None:
    n, d, acked, t = stream
    kept = range(t + 1, n + 1)
    pending = [i for i in range(1, d + 1) if i not in acked]
    acked_untrimmed = sum(1 for i in acked if i > t)
    got = group_lag(
        length=len(kept),
        pending=len(pending),
        last_delivered=f"{d}-0",
        first_id=f"{kept[0]}-0" if kept else None,
        last_generated=f"{n}-0",
    )
    true_lag = n - d
    if got.exact:
        assert got.entries == true_lag
    assert true_lag <= got.entries <= true_lag + acked_untrimmed
    if acked_untrimmed == 0:
        assert got.entries == true_lag


def test_stream_status_on_a_real_stream(redis_client: redis.Redis) -> None:
    assert stream_status(redis_client, "s", "g").length == 0  # no stream: nothing, no error
    ids = [redis_client.xadd("s", {"event": b"{}"}) for _ in range(10)]
    assert stream_status(redis_client, "s", "g").lag == 10  # no group yet: all of it
    redis_client.xgroup_create("s", "g", id="0")
    redis_client.xreadgroup("g", "c", {"s": ">"}, count=4)
    redis_client.xack("s", "g", *ids[:2])
    status = stream_status(redis_client, "s", "g")
    assert (status.length, status.pending, status.lag, status.lag_exact) == (10, 2, 8, False)  # 2 high
    redis_client.xtrim("s", minid=ids[2], approximate=False)  # exact: nothing acked is left untrimmed
    status = stream_status(redis_client, "s", "g")
    assert (status.length, status.pending, status.lag) == (8, 2, 6)
    redis_client.xreadgroup("g", "c", {"s": ">"}, count=100)
    status = stream_status(redis_client, "s", "g")
    assert (status.lag, status.lag_exact, status.last_generated) == (0, True, ids[-1].decode())
    assert [(c.name, c.pending) for c in status.consumers] == [("c", 8)]
