"""Restart the embedded Redis (AOF on, ``appendfsync everysec``) in the middle of a run.

A publisher sends turns at a steady rate — each with its own stream id, retried until Redis has it, so
"acknowledged" means Redis said yes — while the consumer and two workers run. Mid-run, Redis goes away:
shut down cleanly (``SHUTDOWN``: the AOF is flushed) or SIGKILLed (the AOF as the kernel holds it), then
started again on the same port from its AOF. Every acknowledged event must still get exactly one
outcome; the consumer and the workers must come back by themselves, with backoff, and say so in their
logs; none of them may exit.

(tests/fixmem/runtime/test_redis_restart.py restarts Redis between two quiet batches; here it happens while
events, reads, jobs and store writes are in flight.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
import redis

from fixmem.runtime.redis_server import EmbeddedRedis, free_port
from tests.reliability.corpus import valid
from tests.reliability.fleet import FAST, fleet, wait_for
from tests.reliability.ledger import Settlement, settle
from tests.reliability.publisher import Pacer


def restart_run(
    tmp_path: Path, *, how: str, events: int, rate: float, down_seconds: float
) -> tuple[Settlement, Pacer, dict[str, str], float]:
    """Publish ``events`` at ``rate``/s; a third of the way in, take Redis down (``how``: ``shutdown`` or
    ``sigkill``) for ``down_seconds``. Returns the settlement, the publisher, the fleet's logs and the
    seconds from Redis being back to every outcome being in."""
    port = free_port()
    server = EmbeddedRedis(data_dir=tmp_path / "redis", port=port, appendonly=True)
    url = server.start()
    data_dir = tmp_path / "data"
    items = [valid(i, run=f"restart-{how}") for i in range(events)]
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        with fleet(url, data_dir, tmp_path / "logs", workers=2, settings=FAST) as running:
            running.ready(client)
            pacer = Pacer(url, items, rate=rate).start()
            wait_for(lambda: len(pacer.published) >= events // 3, 120, "a third of the events")
            process = server.process
            assert process is not None
            if how == "sigkill":
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
                server.process = None
            else:
                server.stop()
            time.sleep(down_seconds)
            server = EmbeddedRedis(data_dir=tmp_path / "redis", port=port, appendonly=True)
            server.start()
            back = time.monotonic()
            pacer.join(timeout=events / rate + 120)
            client = redis.Redis.from_url(url, socket_timeout=5)
            outcome = settle(pacer.published, client, data_dir)

            def done() -> bool:
                nonlocal outcome
                running.check()
                outcome = settle(pacer.published, client, data_dir)
                return outcome.settled

            with contextlib.suppress(AssertionError):  # reported with the figures
                wait_for(done, 180, "every acknowledged event's outcome", every=0.5)
            took = time.monotonic() - back
            crashes = running.crashes()
            logs = {name: running.log_text(name) for name in running.members}
        assert crashes == {}, f"processes exited on their own: {crashes}"
    finally:
        client.close()
        server.stop()
    return outcome, pacer, logs, took


def _check(how: str, outcome: Settlement, pacer: Pacer, logs: dict[str, str], took: float) -> None:
    print(
        f"\nredis {how} mid-run: {outcome.summary()}\npublisher retried {pacer.retries} times over "
        f"{pacer.outage_seconds:.1f}s of outage; every acknowledged event settled {took:.1f}s after Redis "
        "was back"
    )
    assert outcome.settled and outcome.lost == 0 and outcome.duplicated == 0, outcome.entries_missing[:5]
    consumer = logs["c0"]
    assert "redis unreachable at redis://127.0.0.1" in consumer and "retrying in" in consumer
    assert "redis is back" in consumer
    for name in ("w0", "w1"):  # fixmem's loop ("redis unreachable…") or RQ's dequeue ("could not connect…")
        said = logs[name]
        assert "retrying in" in said and (
            "redis unreachable at" in said or "could not connect to Redis" in said
        )


def test_redis_killed_and_restarted_mid_run_loses_no_acknowledged_event(tmp_path: Path) -> None:
    outcome, pacer, logs, took = restart_run(tmp_path, how="sigkill", events=300, rate=100, down_seconds=1.5)
    _check("sigkill", outcome, pacer, logs, took)


@pytest.mark.chaos
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("how", ["shutdown", "sigkill"])
def test_chaos_redis_restarted_mid_run_under_5000_events(how: str, tmp_path: Path) -> None:
    outcome, pacer, logs, took = restart_run(tmp_path, how=how, events=5_000, rate=100, down_seconds=5)
    _check(how, outcome, pacer, logs, took)
