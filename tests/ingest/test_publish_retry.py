"""The SDK retries a publish while Redis restarts, with backoff, within the call's time budget."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fixmem.runtime.redis_server import EmbeddedRedis
from ingest import keys, publish
from ingest.errors import PublishError
from ingest.publish import connect, publish_turn
from tests.ingest.turns import turn


def test_a_publish_during_a_redis_restart_is_retried_until_redis_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed on the old code: a Redis restart surfaced as PublishError (no retry: no ``_sleep``)."""
    server = EmbeddedRedis(tmp_path / "redis")
    url = server.start()
    server.stop()  # Redis is down when the harness publishes
    waits: list[float] = []
    retried = threading.Event()

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        retried.set()
        time.sleep(seconds)

    monkeypatch.setattr(publish, "_sleep", sleep)
    result: list[str | BaseException] = []

    def harness() -> None:
        try:
            result.append(publish_turn(connect(url, timeout=2.0), turn(1), retry_seconds=120))
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=harness)
    thread.start()
    try:
        assert retried.wait(60), "the publish did not retry"
        server.start(keep_port=True)  # Redis is back on the same port
        thread.join(120)
        assert not thread.is_alive()
        (stream_id,) = result
        assert isinstance(stream_id, str), stream_id
        assert connect(url).xlen(keys.DEFAULT_STREAM) == 1
        assert waits[:3] == [0.05, 0.1, 0.2][: len(waits[:3])]  # backoff doubles
    finally:
        server.stop()


def test_with_redis_down_for_good_it_gives_up_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(publish, "_sleep", waits.append)  # no real waiting: the budget is what is checked
    clock = [1000.0]

    def monotonic() -> float:
        return clock[0] + sum(waits)

    monkeypatch.setattr(publish.time, "monotonic", monotonic)
    client = connect("redis://127.0.0.1:1/0", timeout=0.5)  # nothing listens on port 1
    with pytest.raises(PublishError, match=r"6 tries in 1\.[56] s\): is Redis running\?"):
        publish_turn(client, turn(1), retry_seconds=2.0)
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8]  # the next (1.0) would start after the 2 s budget
    waits.clear()
    with pytest.raises(PublishError, match="1 tries"):
        publish_turn(client, turn(1), retry_seconds=0)
    assert waits == []
