"""Verdicts that logs already carry: SWE-bench report.json, OpenHands test_result, Aider's later /run.

The mini-swe-agent ``report.json`` fixture holds the real SWE-bench reports of its three trajectories
(SOURCE.md). The SWE-agent report and the OpenHands ``test_result.report`` below are written by these tests
(in ``tmp_path``) beside / into real fixture logs: no such report is published for those runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from ingest.importers import import_file
from ingest.importers.verdicts import summary_passed, swebench_resolved
from tests.ingest.importers.support import FIXTURES, load

PYTEST_PASS = (
    "collected 3 items\n\ntests/test_a.py ...   [100%]\n\n============ 3 passed in 0.04s ============\n"
)
PYTEST_FAIL = "==== FAILURES ====\n___ test_a ___\n=========== 1 failed, 2 passed in 0.05s ===========\n"


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        (PYTEST_PASS, True),
        (PYTEST_FAIL, False),
        ("====== 2 passed, 1 error in 0.3s ======", False),
        ("============ no tests ran in 0.01s ============", None),
        (
            "......\n" + "-" * 70 + "\nRan 6 tests in 0.002s\n\nOK\n",
            True,
        ),
        ("Ran 6 tests in 0.002s\n\nFAILED (failures=1)\n", False),
        ("Tests:       1 failed, 4 passed, 5 total\n", False),
        ("Tests:       5 passed, 5 total\n", True),
        ("bash: pytest: command not found", None),
        ("all good, I think", None),
    ],
)
def test_tests_passed_reads_only_a_summary(output: str, passed: bool | None) -> None:
    assert summary_passed(output) is passed


@pytest.mark.parametrize(
    ("report", "resolved"),
    [
        ({"repo__x-1": {"resolved": True}}, True),  # the harness's {instance_id: report}
        ({"repo__x-2": {"resolved": True}}, None),  # another instance
        ({"resolved": False, "patch_exists": True}, False),  # one instance's flat report
        ({"resolved_ids": ["repo__x-1"], "unresolved_ids": []}, True),  # a run summary
        ({"resolved_ids": [], "unresolved_ids": ["repo__x-1"]}, False),
        ({"repo__x-1": {"patch_is_None": True}}, None),
    ],
)
def test_swebench_report_forms(report: dict[str, object], resolved: bool | None) -> None:
    assert swebench_resolved(orjson.dumps(report), "repo__x-1") is resolved
    assert swebench_resolved(b"{not json", "repo__x-1") is None


def test_mini_swe_agent_trajectories_take_the_real_report_beside_them(tmp_path: Path) -> None:
    verdicts = {}
    for name in ("django__django-16255", "django__django-10999", "pytest-dev__pytest-7521"):
        [event] = load(f"mini-swe-agent/{name}.traj.json").events
        verdicts[name] = event.harness_meta.verdict
        alone = tmp_path / f"{name}.traj.json"  # the same log with no report beside it
        shutil.copy(FIXTURES / "mini-swe-agent" / alone.name, alone)
        [plain] = import_file(alone, owner="tester").events
        assert plain.harness_meta.verdict is None and plain.event_id == event.event_id  # same turn, same id
    assert {n: (v.source, v.outcome) for n, v in verdicts.items() if v} == {
        "django__django-16255": ("benchmark", "fixed"),
        "django__django-10999": ("benchmark", "partial"),
        "pytest-dev__pytest-7521": ("benchmark", "fixed"),
    }


def test_a_swe_agent_trajectory_with_a_report_beside_it(tmp_path: Path) -> None:
    name = "marshmallow-code__marshmallow-1867"
    shutil.copy(FIXTURES / "swe-agent" / f"{name}.traj", tmp_path / f"{name}.traj")
    (tmp_path / "report.json").write_bytes(orjson.dumps({name: {"resolved": False}}))  # written here
    [event] = import_file(tmp_path / f"{name}.traj", owner="tester").events
    assert event.harness_meta.verdict is not None
    assert (event.harness_meta.verdict.source, event.harness_meta.verdict.outcome) == ("benchmark", "partial")
    (tmp_path / "report.json").write_bytes(b"{torn")
    [plain] = import_file(tmp_path / f"{name}.traj", owner="tester").events
    assert plain.harness_meta.verdict is None and plain.event_id == event.event_id


def test_openhands_test_result_resolved_is_a_verdict(tmp_path: Path) -> None:
    line = (FIXTURES / "openhands/multi_swe_bench_example/output.jsonl").read_bytes().strip()
    [plain] = load("openhands/multi_swe_bench_example/output.jsonl").events
    assert plain.harness_meta.verdict is None  # the example has a git_patch, no evaluation report
    record = orjson.loads(line)
    record["test_result"]["report"] = {"resolved": True}  # what eval_infer adds; written here
    path = tmp_path / "output.jsonl"
    path.write_bytes(orjson.dumps(record) + b"\n")
    [judged] = import_file(path, owner="tester").events
    assert judged.harness_meta.verdict is not None and judged.harness_meta.verdict.outcome == "fixed"
    assert judged.event_id == plain.event_id


def test_openhands_resolver_success_is_not_a_verdict() -> None:
    events = load("openhands/resolver_mock_output/output.jsonl").events
    assert events and all(e.harness_meta.verdict is None for e in events)


def test_aider_a_later_passing_run_judges_the_last_editing_request() -> None:
    """The [fix-content] finding: the passing ``/run pytest`` touched no file and was dropped, so the fix it
    confirmed stayed ``partial``. Now it is a ``ci`` verdict on the request that made the change."""
    add_test = load("aider/add-test.md").events
    assert [e.harness_meta.verdict is not None for e in add_test] == [False, True, False]
    verdict = add_test[1].harness_meta.verdict
    assert verdict is not None and (verdict.source, verdict.outcome) == ("ci", "fixed")
    assert verdict.detail == "later /run pytest tests/test_commands.py: 1 passed in 0.38s"
    no_color = load("aider/no-color.md").events
    assert [e.user_message[:10] for e in no_color if e.harness_meta.verdict] == ["add a test"]
