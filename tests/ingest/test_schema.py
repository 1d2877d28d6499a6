"""The v1 turn-event schema: what is accepted, what is refused, and with which reason."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.schema import (
    TurnEvent,
    VerdictEvent,
    derive_event_id,
    parse_address,
    parse_any,
    parse_event,
    validate_event,
)


def event(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "v": 1,
        "ts": 1732450000.0,
        "owner": "alice",
        "project_key": "/home/u/my-app",
        "user_message": "fix the login timeout bug",
        "tool_events": [
            {"tool": "bash", "input": {"command": "pytest -q"}, "output": "1 failed", "exit_code": 1}
        ],
    }
    base.update(overrides)
    return base


def test_minimal_event_parses_with_defaults() -> None:
    parsed = parse_event(orjson.dumps(event()))
    assert parsed.owner == "alice"
    assert parsed.tool_events[0].input == {"command": "pytest -q"}
    assert parsed.harness_meta.gate_downgraded is False
    assert parsed.event_id.startswith("ev-") and len(parsed.event_id) == 35


def test_derived_event_id_is_stable_and_content_sensitive() -> None:
    a = validate_event(event())
    b = validate_event(event(round_texts=[]))  # an explicit default is the same event
    c = validate_event(event(user_message="something else"))
    assert a.event_id == b.event_id
    assert a.event_id != c.event_id


def test_given_event_id_is_kept() -> None:
    assert validate_event(event(event_id="turn-42")).event_id == "turn-42"


def test_legacy_tool_event_shape_is_accepted() -> None:
    legacy = {
        "tool": "edit_file",
        "command": '{"path": "src/auth.py", "old": "a", "new": "b"}',
        "output": "ok",
        "diff": "--- a/src/auth.py\n+++ b/src/auth.py\n",
    }
    raw_shell = {"tool": "bash", "command": "pytest -q", "output": "3 passed"}
    parsed = validate_event(event(tool_events=[legacy, raw_shell]))
    assert parsed.tool_events[0].input == {"path": "src/auth.py", "old": "a", "new": "b"}
    assert parsed.tool_events[0].diff is not None
    assert parsed.tool_events[1].input == {"command": "pytest -q"}


def test_content_block_output_is_joined_as_text() -> None:
    parsed = validate_event(
        event(tool_events=[{"tool": "Bash", "input": {}, "output": [{"type": "text", "text": "x"}]}])
    )
    assert parsed.tool_events[0].output == "x"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff\xfe{}", DeadLetterReason.INVALID_UTF8),
        (b"{not json", DeadLetterReason.INVALID_JSON),
        (b"[1, 2]", DeadLetterReason.NOT_AN_OBJECT),
        (orjson.dumps(event(v=2)), DeadLetterReason.UNSUPPORTED_VERSION),
        (orjson.dumps(event(v=True)), DeadLetterReason.UNSUPPORTED_VERSION),
        (orjson.dumps({k: v for k, v in event().items() if k != "v"}), DeadLetterReason.UNSUPPORTED_VERSION),
        (orjson.dumps(event(owner="")), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(owner="..")), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(owner="a/b")), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(owner="a\x00b")), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(owner="x" * 5000)), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(project_key="p\x00")), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(project_key=" ")), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(ts="yesterday")), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(ts=-1)), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(tool_events=[{"input": {}}])), DeadLetterReason.INVALID_FIELDS),
        (orjson.dumps(event(tool_events="bash")), DeadLetterReason.INVALID_FIELDS),
        (b"[" * 5000 + b"]" * 5000, DeadLetterReason.INVALID_JSON),
    ],
)
def test_bad_payloads_are_refused_with_a_reason(raw: bytes, reason: DeadLetterReason) -> None:
    with pytest.raises(InvalidEvent) as info:
        parse_event(raw)
    assert info.value.reason is reason
    assert info.value.message


def test_missing_fields_are_named() -> None:
    with pytest.raises(InvalidEvent) as info:
        validate_event({"v": 1})
    for name in ("ts", "owner", "project_key"):
        assert name in info.value.message


def test_size_limit_is_checked_before_parsing() -> None:
    big = orjson.dumps(event(user_message="x" * 2000))
    with pytest.raises(InvalidEvent) as info:
        parse_event(big, max_bytes=1024)
    assert info.value.reason is DeadLetterReason.TOO_LARGE


def test_integers_beyond_64_bits_are_kept_not_crashed_on() -> None:
    huge = 2**70
    parsed = validate_event(
        event(tool_events=[{"tool": "x", "input": {"n": huge}, "output": {"n": huge}}], user_message="big")
    )
    assert parsed.tool_events[0].output == '{"n":1180591620717411303424}'
    assert parsed.event_id.startswith("ev-")
    assert parse_event(parsed.to_wire()).event_id == parsed.event_id


def test_wire_round_trip_keeps_the_event() -> None:
    parsed = validate_event(event())
    assert parse_event(parsed.to_wire()) == parsed


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_any_json_value_either_validates_or_raises_invalid_event(value: Any) -> None:
    try:
        result = validate_event(value)
    except InvalidEvent as exc:
        assert exc.reason in set(DeadLetterReason)
    else:
        assert isinstance(result, TurnEvent)


@given(st.dictionaries(st.sampled_from([*event().keys(), "harness_meta"]), json_values))
def test_mutated_events_never_escape_as_other_exceptions(mutation: dict[str, Any]) -> None:
    try:
        parsed = validate_event(event(**mutation))
    except InvalidEvent as exc:
        assert exc.message
    else:
        assert parsed.owner and parsed.project_key


def test_a_derived_id_is_the_one_earlier_versions_gave() -> None:
    """Fields added to v1 later (``harness_meta.changed_files``) do not move the id of an event without
    them: a turn retried across an upgrade stays one entry (the id pinned here is b6585f5's)."""
    event = TurnEvent.model_validate(
        {
            "v": 1, "ts": 1767225600, "owner": "alice", "project_key": "github.com/acme/widgets",
            "workspace": "/home/alice/widgets", "user_message": "parse_row splits quoted commas",
            "tool_events": [
                {"tool": "bash", "input": {"command": "pytest -q"}, "output": "1 failed", "exit_code": 1}
            ],
            "harness_meta": {"harness": "my-agent", "commit": "3f9c2ab"},
        }
    )  # fmt: skip
    assert event.event_id == "ev-ff085eddc858462dcc204754ce5474bb"
    with_files = event.model_copy(
        update={"harness_meta": event.harness_meta.model_copy(update={"changed_files": ["a.py"]})}
    )
    assert derive_event_id(with_files) != event.event_id


# -- verdict events -------------------------------------------------------------------------------------

_VERDICT = {"v": 1, "kind": "verdict", "event_id": "ev-1", "ts": 1.0, "owner": "a", "project_key": "p",
            "outcome": "fixed", "source": "ci"}  # fmt: skip


def test_a_verdict_event_parses_and_a_turn_reader_refuses_it() -> None:
    event = parse_any(orjson.dumps(_VERDICT))
    assert isinstance(event, VerdictEvent) and (event.source, event.outcome) == ("ci", "fixed")
    assert parse_any(event.to_wire()) == event
    with pytest.raises(InvalidEvent) as refused:
        parse_event(orjson.dumps(_VERDICT))
    assert refused.value.reason is DeadLetterReason.INVALID_FIELDS


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"event_id": ""}, "give event_id, entry_id or link"),
        ({"source": "nightly"}, "source"),
        ({"outcome": "resolved"}, "outcome"),
        ({"entry_id": "fix-XYZ"}, "entry_id"),
        ({"owner": "../x"}, "owner"),
        ({"kind": "comment"}, "unknown event kind"),
    ],
)
def test_a_malformed_verdict_is_refused_with_its_field(change: dict[str, object], where: str) -> None:
    with pytest.raises(InvalidEvent) as refused:
        parse_any(orjson.dumps({**_VERDICT, **change}))
    assert refused.value.reason is DeadLetterReason.INVALID_FIELDS and where in refused.value.message


def test_a_turn_with_kind_turn_or_a_carried_verdict_keeps_its_id() -> None:
    body = {"v": 1, "ts": 5.0, "owner": "a", "project_key": "p", "user_message": "fix it"}
    plain = validate_event(body).event_id
    assert validate_event({**body, "kind": "turn"}).event_id == plain
    judged = {**body, "harness_meta": {"verdict": {"source": "benchmark", "outcome": "partial"}}}
    event = validate_event(judged)
    assert event.event_id == plain and event.harness_meta.verdict is not None


_VERDICT_FIELDS = {"kind": "verdict", "event_id": "ev-1", "outcome": "fixed", "source": "ci"}


@given(
    st.booleans(),
    st.dictionaries(
        st.sampled_from(["v", "kind", "owner", "project_key", "workspace", "tool_events", "ts"]),
        json_values | st.sampled_from(["", ".", "a/b", "a\x00b", "x" * 5000, "turn", "verdict"]),
    ),
)
def test_the_address_the_consumer_checks_agrees_with_the_full_validation(
    is_verdict: bool, mutation: dict[str, Any]
) -> None:
    """``parse_address`` (the consumer's only check) refuses no event ``parse_any`` (the worker's) accepts,
    routes it by the same owner, project key and workspace, and gives the same reason for what it refuses."""
    raw = json.dumps(event(**{**(_VERDICT_FIELDS if is_verdict else {}), **mutation})).encode()
    try:
        full = parse_any(raw)
    except InvalidEvent as exc:
        try:
            parse_address(raw)
        except InvalidEvent as refused:
            assert refused.reason is exc.reason and refused.message
        return
    address = parse_address(raw)
    assert (address.owner, address.project_key) == (full.owner, full.project_key)
    assert address.workspace == (full.workspace if isinstance(full, TurnEvent) else "")
