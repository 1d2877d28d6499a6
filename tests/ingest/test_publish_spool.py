"""The SDK's optional on-disk spool: turns Redis did not take are kept and sent once it answers again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis

from ingest import keys
from ingest.errors import PublishError
from ingest.publish import Spool, connect, publish_many, publish_turn
from ingest.schema import parse_event
from tests.ingest.turns import turn

DOWN = "redis://127.0.0.1:1/0"  # nothing listens on port 1


def test_spooled_while_down_then_sent_first_when_redis_answers(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    """Failed on the old code: no spool (the harness got PublishError and the turns were lost)."""
    spool = Spool(tmp_path / "spool")
    down = connect(DOWN, timeout=0.5)
    with pytest.raises(PublishError):
        publish_turn(down, turn(1), retry_seconds=0)  # without a spool: the error, as before
    assert publish_many(down, [turn(1), turn(2)], retry_seconds=0, spool=spool) == ["", ""]
    assert publish_turn(down, turn(3), retry_seconds=0, spool=spool) == ""
    assert len(spool.pending()) == 2
    rows = [json.loads(line) for line in spool.pending()[0].read_text().splitlines()]
    assert [r["stream"] for r in rows] == [keys.DEFAULT_STREAM] * 2
    # Redis is back: the next publish sends the spooled turns first, oldest first, then its own
    stream_id = publish_turn(connect(redis_url), turn(4), spool=spool)
    assert stream_id and spool.pending() == []
    sent = [parse_event(f[keys.EVENT_FIELD]) for _, f in redis_client.xrange(keys.DEFAULT_STREAM)]
    assert [e.harness_meta.turn for e in sent] == [1, 2, 3, 4]


def test_a_file_whose_send_fails_stays_spooled(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.put(keys.DEFAULT_STREAM, [json.dumps(turn(1)).encode()])
    calls: list[tuple[str, int]] = []

    def failing(stream: str, wires: Sequence[bytes]) -> None:
        calls.append((stream, len(wires)))
        raise PublishError("still down")

    with pytest.raises(PublishError):
        spool.drain(failing)
    assert calls == [(keys.DEFAULT_STREAM, 1)] and len(spool.pending()) == 1
    assert spool.drain(lambda stream, wires: calls.append((stream, len(wires)))) == 1
    assert spool.pending() == [] and list(tmp_path.iterdir()) == []
