"""A turn with a huge tool output (a 5 MB test log) is published with the output's head and tail and the
cut marked, instead of being refused whole (``too_large``); only what cannot be cut is refused."""

from __future__ import annotations

import orjson
import pytest
import redis

from ingest import keys
from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.publish import publish_turn
from ingest.schema import DEFAULT_MAX_EVENT_BYTES, parse_event
from tests.ingest.turns import turn, wire

HEAD = "============================= test session starts ==============================\n"
TAIL = (
    "\nFAILED tests/test_mod1.py::test_parse - AssertionError\n===== 1 failed, 2999 passed in 41.20s =====\n"
)


def _huge() -> dict[str, object]:
    event = turn(1)
    tools = event["tool_events"]
    assert isinstance(tools, list)
    tools[0]["output"] = HEAD + "tests/test_mod1.py::test_case PASSED\n" * 140_000 + TAIL  # ~5.2 MB
    return event


@pytest.mark.parametrize("as_bytes", [False, True], ids=["dict", "wire-bytes"])
def test_a_5mb_test_log_is_cut_to_head_and_tail_and_published(
    redis_client: redis.Redis, as_bytes: bool
) -> None:
    """Failed on the old code: InvalidEvent too_large, nothing published."""
    event = _huge()
    size = len(wire(event))
    assert size > 5_000_000
    stream_id = publish_turn(redis_client, wire(event) if as_bytes else event)
    ((_, fields),) = redis_client.xrange(keys.DEFAULT_STREAM, stream_id, stream_id)
    stored = fields[keys.EVENT_FIELD]
    assert len(stored) <= DEFAULT_MAX_EVENT_BYTES
    parsed = parse_event(stored)  # what the consumer does: it is valid and under the limit
    output = parsed.tool_events[0].output
    assert output.startswith(HEAD) and output.endswith(TAIL)
    assert "[... fixmem cut " in output
    assert (parsed.harness_meta.model_extra or {})["cut"] == ["tool_events.0.output"]
    assert [t.output for t in parsed.tool_events[1:]] == [t["output"] for t in event["tool_events"][1:]]  # type: ignore[index, union-attr]
    assert parsed.user_message == event["user_message"]
    # the id is the one of the whole turn: a retried publish of the same turn is recorded once
    assert parsed.event_id == parse_event(orjson.dumps(event), max_bytes=size).event_id


def test_what_cannot_be_cut_is_still_refused(redis_client: redis.Redis) -> None:
    event = turn(1)
    event["project_key"] = event["workspace"] = "/" + "x" * 4000
    with pytest.raises(InvalidEvent) as info:
        publish_turn(redis_client, event, max_bytes=4096)
    assert info.value.reason is DeadLetterReason.TOO_LARGE and "cannot make it fit" in str(info.value)
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 0
