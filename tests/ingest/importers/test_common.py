"""Shared pieces: fitting under the wire limit, times, instance ids, event ids."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ingest.importers._common import (
    MIN_FIT_CHARS,
    Origin,
    TurnDraft,
    build_events,
    cut_middle,
    parse_time,
    repo_of_instance,
    sha,
)
from ingest.importers.mini_swe_agent import parse as parse_mini
from ingest.schema import DEFAULT_MAX_EVENT_BYTES

ORIGIN = Origin(format="test", identity="session-1", owner="o", project_key="p")


def test_cut_middle_keeps_head_and_tail_and_says_how_much() -> None:
    text = "HEAD" + "x" * 10_000 + "TAIL"
    cut = cut_middle(text, 100)
    assert cut.startswith("HEAD") and cut.endswith("TAIL")
    assert "[... fixmem cut 9908 chars from the middle ...]" in cut
    assert cut_middle("short", 100) == "short"


def test_a_huge_output_is_cut_to_fit_and_the_event_says_which() -> None:
    big = "line of pytest output\n" * 200_000  # 4.4 MB
    draft = TurnDraft(
        user_message="fix",
        tool_events=[
            {
                "tool": "bash",
                "input": {"command": "pytest"},
                "output": "FAILED test_a\n" + big + "1 failed in 3s",
            },
            {"tool": "bash", "input": {"command": "ls"}, "output": "a.py"},
        ],
    )
    (event,) = build_events(ORIGIN, [draft])
    assert len(event.to_wire()) <= DEFAULT_MAX_EVENT_BYTES
    kept = event.tool_events[0].output
    assert kept.startswith("FAILED test_a\n") and kept.endswith("1 failed in 3s")
    assert "chars from the middle ...]" in kept
    assert event.tool_events[1].output == "a.py"
    assert event.harness_meta.model_extra is not None and event.harness_meta.model_extra["cut"] == [
        "tool_events.0.output"
    ]


def test_many_big_strings_are_cut_in_order_outputs_first() -> None:
    tools: list[dict[str, Any]] = [
        {"tool": "Write", "input": {"file_path": f"f{i}.py", "content": "c" * 60_000}, "output": "o" * 60_000}
        for i in range(20)
    ]
    (event,) = build_events(ORIGIN, [TurnDraft(user_message="u", tool_events=tools)])
    assert len(event.to_wire()) <= DEFAULT_MAX_EVENT_BYTES
    cut = event.harness_meta.model_extra["cut"] if event.harness_meta.model_extra else []
    assert cut[:20] == [f"tool_events.{i}.output" for i in range(20)]
    assert all(len(t.output) < 60_000 for t in event.tool_events)
    assert all(t.input["file_path"] == f"f{i}.py" for i, t in enumerate(event.tool_events))


def test_thousands_of_tool_calls_drop_the_middle_as_a_last_resort() -> None:
    tools = [
        {
            "tool": "bash",
            "input": {"command": f"echo {i} " + "y" * MIN_FIT_CHARS},
            "output": "z" * MIN_FIT_CHARS,
        }
        for i in range(3000)
    ]
    (event,) = build_events(ORIGIN, [TurnDraft(tool_events=tools)])
    assert len(event.to_wire()) <= DEFAULT_MAX_EVENT_BYTES
    extra = event.harness_meta.model_extra or {}
    assert extra["cut_tool_events"] == 3000 - len(event.tool_events) > 0
    assert event.tool_events[0].input["command"].startswith("echo 0 ")
    assert event.tool_events[-1].input["command"].startswith("echo 2999 ")


def test_importer_output_over_the_limit_is_cut() -> None:
    huge = "E   AssertionError\n" * 100_000
    doc = {
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "acme__widgets-12",
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "user", "content": "<pr_description>\nfix widgets\n</pr_description>"},
            {"role": "assistant", "content": "THOUGHT: run\n\n```bash\npytest\n```"},
            {"role": "user", "content": f"<returncode>1</returncode>\n<output>\n{huge}</output>"},
        ],
    }
    (event,) = parse_mini(orjson.dumps(doc), source="x.traj.json", owner="o")
    assert len(event.to_wire()) <= DEFAULT_MAX_EVENT_BYTES
    assert event.tool_events[0].exit_code == 1 and "chars from the middle" in event.tool_events[0].output
    assert event.project_key == "acme/widgets" and event.user_message == "fix widgets"


def test_event_ids_depend_on_identity_turn_and_content() -> None:
    drafts = [TurnDraft(user_message="a"), TurnDraft(user_message="a")]
    one, two = build_events(ORIGIN, drafts)
    assert one.event_id != two.event_id  # same content, another turn
    other = Origin(format="test", identity="session-2", owner="o", project_key="p")
    assert build_events(other, drafts)[0].event_id != one.event_id
    assert build_events(ORIGIN, drafts)[0].event_id == one.event_id
    assert build_events(ORIGIN, [TurnDraft(user_message="b")])[0].event_id != one.event_id


def test_undated_turns_get_the_epoch_plus_their_index() -> None:
    one, two = build_events(ORIGIN, [TurnDraft(), TurnDraft(ts=1_700_000_000.0)])
    assert one.ts == 946684800.0 and (one.harness_meta.model_extra or {}).get("ts_derived") is True
    assert two.ts == 1_700_000_000.0 and "ts_derived" not in (two.harness_meta.model_extra or {})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-04-30T16:34:22.948624", 1746030862.948624),  # OpenHands: naive, read as UTC
        ("2026-04-30T20:32:41.678Z", 1777581161.678),  # Codex
        ("2025-06-03T09:14:44.000+02:00", 1748934884.0),
        ("2024-08-05 19:33:02", 1722886382.0),  # Aider's "chat started at"
        (1763509960, 1763509960.0),  # mini-swe-agent's response.created
        (1763509960123, 1763509960.123),  # milliseconds
        ("yesterday", None),
        ("", None),
        (None, None),
        (True, None),
        (-5, None),
        (float("inf"), None),
    ],
)
def test_parse_time(value: object, expected: float | None) -> None:
    assert parse_time(value) == expected


@pytest.mark.parametrize(
    ("instance", "repo"),
    [
        ("django__django-10999", "django/django"),
        ("pytest-dev__pytest-7521", "pytest-dev/pytest"),
        ("scikit-learn__scikit-learn-25747", "scikit-learn/scikit-learn"),
        ("swe-agent__test-repo-i1", "swe-agent/test-repo"),
        ("pydicom__pydicom", "pydicom/pydicom"),
        ("testbed", None),
        ("", None),
    ],
)
def test_repo_of_instance(instance: str, repo: str | None) -> None:
    assert repo_of_instance(instance) == repo


def test_sha() -> None:
    assert sha("BFD2593D4B416122E30CDEFE0C72D322EF471611") == "bfd2593d4b416122e30cdefe0c72d322ef471611"
    assert sha("e2d5212") == "e2d5212"
    assert sha("HEAD") is None and sha("") is None and sha("abc") is None
