"""``extract``: skip reasons, the entry's fields, outcome rules, harness overrides, redaction, ids."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.schema import TurnEvent
from store.entry import entry_id
from store.redact import REDACTED
from workers.extraction import EXTRACTOR_VERSION, Extracted, SkipReason, extract

WS = "/home/u/app"
EDIT = {"tool": "Edit", "input": {"file_path": f"{WS}/src/auth.py", "old_string": "a", "new_string": "b"}}
PASS = {"tool": "Bash", "input": {"command": "pytest -q"}, "output": "3 passed in 0.12s", "exit_code": 0}
FAIL = {
    "tool": "Bash",
    "input": {"command": "pytest -q"},
    "output": "E       ValueError: timeout after 30 seconds\n1 failed, 2 passed in 0.12s",
    "exit_code": 1,
}


def turn(*tool_events: dict[str, Any], **fields: Any) -> TurnEvent:
    data: dict[str, Any] = {
        "v": 1,
        "ts": 1732450000.0,
        "owner": "alice",
        "project_key": WS,
        "user_message": "fix the login timeout bug",
        "tool_events": list(tool_events),
    }
    data.update(fields)
    return TurnEvent.model_validate(data)


def entry_of(event: TurnEvent) -> Any:
    result = extract(event)
    assert result.skip is None and result.entry is not None
    return result.entry


def test_a_full_entry() -> None:
    event = turn(FAIL, EDIT, PASS, round_texts=["Looking.", "Raised the timeout to 60s. Tests pass now."])
    entry = entry_of(event)
    assert entry.id == entry_id("alice", WS, event.event_id)
    assert entry.files == ["src/auth.py"]
    assert entry.errors == ["ValueError: timeout after # seconds"]
    assert entry.tests is not None and entry.tests.summary == "3 passed"
    assert entry.outcome == "fixed"
    assert entry.solution == "changed auth.py; tests: 3 passed. Raised the timeout to 60s."
    assert entry.tags == ["python", "pytest", "ValueError", "fixed"]
    assert entry.task == "fix the login timeout bug"
    assert entry.extractor == EXTRACTOR_VERSION
    assert entry.event_id == event.event_id
    assert entry.project == WS


@pytest.mark.parametrize(
    ("events", "fields", "skip"),
    [
        ([EDIT], {}, None),
        ([PASS], {}, SkipReason.NO_FILES),
        ([{"tool": "Read", "input": {"file_path": f"{WS}/a.py"}}], {}, SkipReason.NO_FILES),
        ([], {}, SkipReason.NO_FILES),
    ],
)
def test_skip_reasons(events: list[dict[str, Any]], fields: dict[str, Any], skip: SkipReason | None) -> None:
    result = extract(turn(*events, **fields))
    assert result.skip is skip
    assert (result.entry is None) is (skip is not None)


def test_disabled_and_no_owner() -> None:
    assert extract(turn(EDIT), enabled=False) == Extracted(entry=None, skip=SkipReason.DISABLED)
    no_owner = turn(EDIT).model_copy(update={"owner": " "})
    assert extract(no_owner) == Extracted(entry=None, skip=SkipReason.NO_OWNER)


@pytest.mark.parametrize(
    ("events", "meta", "outcome"),
    [
        ([EDIT, PASS], {}, "fixed"),
        ([EDIT, FAIL], {}, "partial"),
        ([PASS, EDIT, FAIL], {}, "partial"),
        ([FAIL, EDIT, PASS], {}, "fixed"),
        ([EDIT], {}, "unverified"),
        ([EDIT, PASS], {"gate_downgraded": True}, "unverified"),
        ([EDIT, PASS], {"stop_reason": "complete_unverified"}, "unverified"),
        ([EDIT, FAIL], {"tests": {"command": "make ci", "ok": True, "summary": "ci green"}}, "fixed"),
        ([EDIT, PASS], {"tests": {"command": "make ci", "ok": False}}, "partial"),
        ([EDIT], {"tests": {"command": "make ci", "ok": True}}, "fixed"),
    ],
)
def test_outcome(events: list[dict[str, Any]], meta: dict[str, Any], outcome: str) -> None:
    assert entry_of(turn(*events, harness_meta=meta)).outcome == outcome


def test_harness_tests_override_parsing() -> None:
    entry = entry_of(
        turn(EDIT, FAIL, harness_meta={"tests": {"command": "make ci", "ok": True, "summary": "ok"}})
    )
    assert (entry.tests.command, entry.tests.ok, entry.tests.summary) == ("make ci", True, "ok")
    assert "pytest" not in entry.tags


def test_same_turn_same_id_different_turns_differ() -> None:
    first = entry_of(turn(EDIT, event_id="ev-1"))
    again = entry_of(turn(EDIT, event_id="ev-1"))
    other = entry_of(turn(EDIT, event_id="ev-2"))
    assert first.id == again.id != other.id


SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_secrets_are_redacted_in_every_stored_field() -> None:
    leaky_edit = {
        "tool": "Edit",
        "input": {"file_path": f"{WS}/config/{SECRET}.py", "old_string": "a", "new_string": "b"},
    }
    leaky_run = {
        "tool": "Bash",
        "input": {"command": f"GITHUB_TOKEN={SECRET} pytest -q"},
        "output": f"E   ValueError: bad token {SECRET}\n1 failed in 0.1s",
        "exit_code": 1,
    }
    event = turn(
        leaky_edit,
        leaky_run,
        user_message=f"use password=hunter2hunter2 and {SECRET}",
        round_texts=[f"Rotated {SECRET}."],
        harness_meta={"commit": SECRET},
    )
    dumped = entry_of(event).model_dump_json()
    assert SECRET not in dumped
    assert "hunter2hunter2" not in dumped
    assert REDACTED in dumped


def test_legacy_tool_event_shape() -> None:
    legacy = {
        "tool": "bash",
        "command": '{"command": "sed -i s/a/b/ src/x.py && pytest -q"}',
        "output": "2 passed in 0.1s",
    }
    entry = entry_of(turn(legacy))
    assert entry.files == ["src/x.py"]
    assert entry.outcome == "fixed"
