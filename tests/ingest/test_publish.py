"""The publisher SDK against a real Redis."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import redis

from fixmem.runtime.redis_server import free_port
from ingest import keys
from ingest.connection import connect
from ingest.errors import DeadLetterReason, InvalidEvent, PublishError
from ingest.publish import publish_many, publish_turn
from ingest.schema import TurnEvent, validate_event
from tests.ingest.turns import turn, wire


def _stored(client: redis.Redis, stream_id: str) -> bytes:
    [(_, fields)] = client.xrange(keys.DEFAULT_STREAM, min=stream_id, max=stream_id)
    return bytes(fields[keys.EVENT_FIELD])


@pytest.mark.parametrize(
    "form",
    [
        lambda e: e,  # a mapping
        lambda e: validate_event(e),  # a TurnEvent
        lambda e: wire(e),  # bytes, sent as given
        lambda e: wire(e).decode(),  # text, sent as given
    ],
    ids=["mapping", "model", "bytes", "text"],
)
def test_publish_turn_accepts_every_event_form(redis_client: redis.Redis, form: object) -> None:
    event = turn(1)
    stream_id = publish_turn(redis_client, form(event))  # type: ignore[operator]
    stored = orjson.loads(_stored(redis_client, stream_id))
    assert stored["owner"] == "alice"
    assert stored["tool_events"][0]["tool"] == "bash"
    assert validate_event(stored).event_id == TurnEvent.model_validate(event).event_id


def test_publish_many_sends_all_or_nothing(redis_client: redis.Redis) -> None:
    ids = publish_many(redis_client, [turn(i) for i in range(50)])
    assert len(ids) == 50 == redis_client.xlen(keys.DEFAULT_STREAM)
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
    with pytest.raises(InvalidEvent) as info:
        publish_many(redis_client, [turn(100), {"v": 1, "owner": "x"}, turn(101)])
    assert info.value.reason is DeadLetterReason.INVALID_FIELDS
    assert "event #1" in str(info.value)
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 50  # nothing of the refused call was sent


def test_oversized_events_are_refused_before_sending(redis_client: redis.Redis) -> None:
    big = turn(
        1
    )  # what cannot be cut (keys) is over the limit; long strings are cut instead (test_publish_fit)
    big["project_key"] = big["workspace"] = "/" + "x" * 4000
    with pytest.raises(InvalidEvent) as info:
        publish_turn(redis_client, big, max_bytes=4096)
    assert info.value.reason is DeadLetterReason.TOO_LARGE
    with pytest.raises(InvalidEvent):
        publish_turn(redis_client, wire(big), max_bytes=4096)
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 0


def test_publish_to_another_stream(redis_client: redis.Redis) -> None:
    publish_turn(redis_client, turn(1), stream=keys.DEFAULT_BACKFILL_STREAM)
    assert redis_client.xlen(keys.DEFAULT_BACKFILL_STREAM) == 1


def test_unreachable_redis_is_a_clear_publish_error_not_a_hang() -> None:
    client = connect(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    with pytest.raises(PublishError, match=r"redis://127\.0\.0\.1:\d+/0.*is Redis running"):
        publish_turn(client, turn(1))


def test_wrong_key_type_names_the_setting(redis_client: redis.Redis) -> None:
    redis_client.set(keys.DEFAULT_STREAM, "not a stream")
    with pytest.raises(PublishError, match="FIXMEM_STREAM"):
        publish_turn(redis_client, turn(1))


def test_out_of_memory_says_the_pipeline_is_behind(redis_client: redis.Redis) -> None:
    old = redis_client.config_get("maxmemory")["maxmemory"]
    redis_client.config_set("maxmemory", "1")
    try:
        with pytest.raises(PublishError, match=r"out of memory.*fixmem status"):
            publish_turn(redis_client, turn(1))
    finally:
        redis_client.config_set("maxmemory", old)


def test_an_event_without_a_project_key_is_keyed_by_its_workspace(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    checkout = tmp_path / "widgets"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://ci:tok@github.com/acme/widgets\n'
    )
    plain = tmp_path / "scratch"
    events = [{**turn(1), "workspace": str(checkout / "src")}, {**turn(2), "workspace": str(plain)}]
    for event in events:
        del event["project_key"]
    publish_many(redis_client, [*events, {**turn(3), "project_key": "given", "workspace": str(checkout)}])
    sent = [orjson.loads(f[b"event"]) for _, f in redis_client.xrange(keys.DEFAULT_STREAM)]
    assert [e["project_key"] for e in sent] == ["github.com/acme/widgets", plain.as_posix(), "given"]
    with pytest.raises(InvalidEvent):  # neither a key nor a workspace: refused as before
        publish_turn(
            redis_client, {k: v for k, v in turn(4).items() if k not in {"project_key", "workspace"}}
        )


def test_verdicts_are_published_as_given_and_checked_first(redis_client: redis.Redis) -> None:
    from ingest.publish import encode_event, publish_verdict  # noqa: PLC0415
    from ingest.schema import VerdictEvent, parse_any  # noqa: PLC0415
    from tests.ingest.turns import verdict  # noqa: PLC0415

    body = verdict(turn(1), source="benchmark", outcome="partial")
    assert encode_event(wire(body)) == wire(body)  # bytes are checked and sent as given
    assert parse_any(encode_event(body)) == parse_any(wire(body))
    stream_id = publish_verdict(
        redis_client, owner="alice", project_key="p", entry_id="fix-0123456789abcdef", outcome="fixed",
        source="review", detail="looked fine", ts=5.0,
    )  # fmt: skip
    [(got_id, fields)] = redis_client.xrange(keys.DEFAULT_STREAM)
    assert got_id.decode() == stream_id
    event = parse_any(fields[keys.EVENT_FIELD])
    assert isinstance(event, VerdictEvent) and (event.source, event.outcome, event.ts) == (
        "review",
        "fixed",
        5.0,
    )
    with pytest.raises(InvalidEvent) as refused:
        publish_verdict(redis_client, owner="alice", project_key="p", outcome="fixed", source="nightly")
    assert refused.value.reason is DeadLetterReason.INVALID_FIELDS
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 1  # nothing sent
