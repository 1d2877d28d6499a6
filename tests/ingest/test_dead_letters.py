"""The dead-letter stream: write (counted), list, show, replay, purge — on a real Redis."""

from __future__ import annotations

import redis

from ingest import dead_letters, keys
from ingest.errors import DeadLetterReason
from ingest.schema import DEFAULT_MAX_EVENT_BYTES, parse_event
from tests.ingest.turns import turn, wire

DEAD = keys.DEFAULT_DEAD_STREAM


def _add(
    client: redis.Redis, reason: DeadLetterReason, payload: bytes | None, origin_id: str = "1-0"
) -> None:
    with client.pipeline(transaction=True) as pipe:
        fields = dead_letters.fields_for(
            reason=reason,
            error=f"bad: {reason.value}",
            origin_stream=keys.DEFAULT_STREAM,
            origin_id=origin_id,
            payload=payload,
            consumer="c1",
            now=1700000000.5,
            deliveries=3 if reason is DeadLetterReason.TOO_MANY_DELIVERIES else None,
        )
        dead_letters.add(pipe, DEAD, fields, max_len=100_000)
        pipe.execute()


def test_a_dead_letter_keeps_reason_error_origin_and_payload(redis_client: redis.Redis) -> None:
    _add(redis_client, DeadLetterReason.INVALID_JSON, b"{oops", "42-1")
    _add(redis_client, DeadLetterReason.TOO_MANY_DELIVERIES, b"{}", "43-0")
    first, second = dead_letters.list_letters(redis_client, DEAD)
    assert first.reason == "invalid_json"
    assert first.error == "bad: invalid_json"
    assert (first.origin_stream, first.origin_id) == (keys.DEFAULT_STREAM, "42-1")
    assert first.payload == b"{oops"
    assert first.consumer == "c1"
    assert first.dead_at == 1700000000.5
    assert second.deliveries == 3
    assert dead_letters.get_letter(redis_client, DEAD, first.id) == first
    assert dead_letters.get_letter(redis_client, DEAD, "1-1") is None
    counted = redis_client.hgetall(keys.METRICS_DEAD_LETTERS)
    assert counted == {b"invalid_json": b"1", b"too_many_deliveries": b"1"}
    assert redis_client.hget(keys.METRICS_EVENTS, "dead_letter") == b"2"


def test_list_filters_by_reason_and_pages(redis_client: redis.Redis) -> None:
    for i in range(700):  # more than one page of 500
        reason = DeadLetterReason.INVALID_JSON if i % 2 else DeadLetterReason.NOT_AN_OBJECT
        _add(redis_client, reason, b"x", f"{i}-0")
    assert len(dead_letters.list_letters(redis_client, DEAD, count=2000)) == 700
    odd = dead_letters.list_letters(redis_client, DEAD, count=2000, reason="invalid_json")
    assert len(odd) == 350
    assert {x.reason for x in odd} == {"invalid_json"}
    page = dead_letters.list_letters(redis_client, DEAD, count=10, after=odd[0].id)
    assert page[0].origin_id == "2-0"


def test_replay_republishes_fixed_payloads_and_keeps_the_broken(redis_client: redis.Redis) -> None:
    _add(redis_client, DeadLetterReason.TOO_LARGE, wire(turn(1)), "1-0")  # valid under today's limit
    _add(redis_client, DeadLetterReason.INVALID_JSON, b"{still broken", "2-0")
    _add(redis_client, DeadLetterReason.MISSING_FIELD, None, "3-0")
    letters = dead_letters.list_letters(redis_client, DEAD)
    result = dead_letters.replay(redis_client, DEAD, letters)
    assert result.replayed == [letters[0].id]
    assert list(result.still_invalid) == [letters[1].id]
    assert result.no_payload == [letters[2].id]
    [(_, fields)] = redis_client.xrange(keys.DEFAULT_STREAM)
    assert fields[keys.EVENT_FIELD] == wire(turn(1))
    assert [x.id for x in dead_letters.list_letters(redis_client, DEAD)] == [letters[1].id, letters[2].id]
    forced = dead_letters.replay(redis_client, DEAD, [letters[1]], validate=False, target="elsewhere")
    assert forced.replayed == [letters[1].id]
    assert redis_client.xlen("elsewhere") == 1


def test_the_stream_is_capped_approximately(redis_client: redis.Redis) -> None:
    with redis_client.pipeline(transaction=False) as pipe:
        for i in range(3000):
            fields = dead_letters.fields_for(
                reason=DeadLetterReason.INVALID_JSON, error="e", origin_stream="s", origin_id=f"{i}-0",
                payload=b"x", consumer="c", now=1.0,
            )  # fmt: skip
            dead_letters.add(pipe, DEAD, fields, max_len=1000)
        pipe.execute()
    assert 1000 <= redis_client.xlen(DEAD) < 1200
    assert redis_client.hget(keys.METRICS_DEAD_LETTERS, "invalid_json") == b"3000"  # every one counted


def test_purge_some_or_all(redis_client: redis.Redis) -> None:
    for i in range(5):
        _add(redis_client, DeadLetterReason.INVALID_JSON, b"x", f"{i}-0")
    ids = [x.id for x in dead_letters.list_letters(redis_client, DEAD)]
    assert dead_letters.purge(redis_client, DEAD, ids[:2]) == 2
    assert dead_letters.purge(redis_client, DEAD, []) == 0
    assert dead_letters.purge(redis_client, DEAD) == 3
    assert redis_client.xlen(DEAD) == 0


def test_replay_fits_a_too_large_turn_the_way_publish_would(redis_client: redis.Redis) -> None:
    """A 5 MB test log refused whole (``too_large``, e.g. XADDed by hand) is replayed cut, not kept."""
    event = turn(1)
    tools = event["tool_events"]
    assert isinstance(tools, list)
    tools[0]["output"] = "collected 3000 items\n" + "tests/test_mod.py::test_case PASSED\n" * 140_000 + "end"
    big = wire(event)
    assert len(big) > DEFAULT_MAX_EVENT_BYTES
    _add(redis_client, DeadLetterReason.TOO_LARGE, big, "1-0")
    result = dead_letters.replay(redis_client, DEAD, dead_letters.list_letters(redis_client, DEAD))
    assert len(result.replayed) == 1 and not result.still_invalid
    [(_, fields)] = redis_client.xrange(keys.DEFAULT_STREAM)
    replayed = parse_event(fields[keys.EVENT_FIELD])  # valid under the limit, as the consumer reads it
    assert len(fields[keys.EVENT_FIELD]) <= DEFAULT_MAX_EVENT_BYTES
    output = replayed.tool_events[0].output
    assert output.startswith("collected 3000 items") and output.endswith("end")
    assert (replayed.harness_meta.model_extra or {})["cut"] == ["tool_events.0.output"]
    assert dead_letters.list_letters(redis_client, DEAD) == []
