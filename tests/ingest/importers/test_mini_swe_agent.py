"""mini-swe-agent trajectories: one event per run, one ``bash`` tool event per action."""

from __future__ import annotations

from pathlib import Path

from ingest.importers import detect_format, mini_swe_agent
from ingest.schema import TurnEvent
from tests.ingest.importers.support import load
from workers.extraction import extract


def only(relative: str) -> TurnEvent:
    result = load(relative)
    assert result.format == "mini-swe-agent"
    assert len(result.events) == 1
    return result.events[0]


def test_django_16255_actions_exit_codes_and_metadata() -> None:
    event = only("mini-swe-agent/django__django-16255.traj.json")
    commands = [t.input["command"] for t in event.tool_events]
    assert len(commands) == 17
    assert {t.tool for t in event.tool_events} == {"bash"}
    assert commands[0] == "ls -R django/contrib/sitemaps"
    sed = (
        "sed -i '171s/except TypeError:/except (TypeError, ValueError):/' django/contrib/sitemaps/__init__.py"
    )
    assert commands[4] == sed
    assert commands[14] == "python3 tests/runtests.py sitemaps_tests"
    assert commands[-1] == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
    # every action but the submission answered <returncode>0</returncode>; the submission has none
    assert [t.exit_code for t in event.tool_events] == [0] * 16 + [None]
    assert "Ran 60 tests" in event.tool_events[14].output and event.tool_events[14].output.rstrip().endswith(
        "alias 'default'..."
    )
    assert event.tool_events[-1].output.startswith("diff --git a/django/contrib/sitemaps/__init__.py")
    assert "<returncode>" not in event.tool_events[0].output
    assert event.project_key == "django/django"
    assert event.workspace == "/testbed"
    assert event.user_message.startswith("Sitemaps without items raise ValueError on callable lastmod.")
    assert "<instructions>" not in event.user_message
    meta = event.harness_meta
    assert (meta.harness, meta.model, meta.session_id, meta.turn, meta.stop_reason) == (
        "mini-swe-agent",
        "google/gemini-3-pro-preview",
        "django__django-16255",
        0,
        "Submitted",
    )
    assert event.ts == 1763510028.0  # the last assistant message's response.created
    assert event.tool_events[0].ts == 1763509960.0
    assert len(event.round_texts) == 17 and event.round_texts[0].startswith(
        "THOUGHT: I need to locate the file"
    )
    assert "```" not in event.round_texts[0]


def test_pytest_7521_elided_output_keeps_head_tail_and_marker() -> None:
    event = only("mini-swe-agent/pytest-dev__pytest-7521.traj.json")
    assert len(event.tool_events) == 28
    codes = [t.exit_code for t in event.tool_events]
    assert codes[2] == 1  # `pytest reproduce_issue.py` failed before the fix
    assert codes[14] == 0  # and passed after it
    assert codes.count(None) == 1 and codes[-1] is None
    cat = event.tool_events[4]
    assert cat.input["command"] == "cat src/_pytest/capture.py"
    assert "19331 characters elided" in cat.output
    assert "<output_head>" not in cat.output and "<warning>" not in cat.output
    assert cat.output.rstrip().endswith("capman.unset_fixture()")
    assert (
        event.tool_events[12].input["command"]
        == "sed -i 's/write_through=True,/write_through=True, newline=\"\",/' src/_pytest/capture.py"
    )
    assert event.project_key == "pytest-dev/pytest"


V2 = Path(__file__).resolve().parents[2] / "fixtures" / "mini-swe-agent-v2" / "calc-average.traj.json"


def test_v2_trajectory_of_the_real_package_actions_codes_task_and_times() -> None:
    """The v2 format (mini-swe-agent 2.4): ``extra.actions``, ``extra.returncode``, ``extra.timestamp``, the
    task inside ``instance_template``; the v1 parser took the whole rendered template as the task."""
    data = V2.read_bytes()
    assert detect_format(V2, data) == "mini-swe-agent"
    (event,) = mini_swe_agent.parse(data, source=str(V2), owner="alice", project="github.com/acme/calc")
    assert event.user_message == "average() in calc/stats.py raises ZeroDivisionError on an empty list"
    commands = [t.input["command"] for t in event.tool_events]
    assert commands[0].startswith("python -m pytest") and commands[1].startswith("cat > calc/stats.py")
    assert [t.exit_code for t in event.tool_events] == [1, 0, 0, None]
    assert event.harness_meta.stop_reason == "Submitted"
    assert event.ts > 1.7e9  # the assistant messages' extra.timestamp, not a derived time
    entry = extract(event).entry
    assert entry is not None and (entry.outcome, entry.files) == ("fixed", ["calc/stats.py"])
