"""The agent-side outcome: runs after the last edit, covering runs, pre-existing failures, scratch test files,
reproduction scripts, and environment noise kept out of the error signatures (issue #16)."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.schema import TurnEvent
from workers.extraction import extract
from workers.extraction.errors import installs, is_environment_noise
from workers.extraction.shell import parse_commands
from workers.extraction.testruns import failing_tests, run_targets

WS = "/repo"


def bash(command: str, output: str = "", exit_code: int | None = 0) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}, "output": output, "exit_code": exit_code}


def edit(path: str = "pkg/separable.py") -> dict[str, Any]:
    return {
        "tool": "Edit",
        "input": {"file_path": f"{WS}/{path}", "old_string": "= 1", "new_string": "= right"},
    }


def write(path: str, content: str = "def test_x():\n    assert True\n") -> dict[str, Any]:
    return {"tool": "Write", "input": {"file_path": f"{WS}/{path}", "content": content}}


PRE = "FAILED tests/test_io.py::test_env - OSError: no display\n1 failed, 4 passed in 0.3s"
PRE_AFTER = "FAILED tests/test_io.py::test_env - OSError: no display\n1 failed, 30 passed in 0.9s"
NEW_FAIL = "FAILED tests/test_separable.py::test_cstack - assert 1 == 2\n1 failed, 30 passed in 0.9s"
PASS = "31 passed in 0.9s"


def outcome_of(*events: dict[str, Any]) -> tuple[str, str | None]:
    turn = TurnEvent.model_validate(
        {"v": 1, "ts": 1.0, "owner": "o", "project_key": WS, "workspace": WS, "tool_events": list(events)}
    )
    entry = extract(turn).entry
    assert entry is not None
    return entry.outcome, entry.tests.summary if entry.tests else None


@pytest.mark.parametrize(
    ("events", "outcome", "summary"),
    [
        pytest.param(  # failing before the first edit and still failing after: pre-existing
            [bash("pytest", PRE, 1), edit(), bash("pytest", PRE_AFTER, 1)],
            "fixed",
            "1 failed, 30 passed; 1 failing before the first edit too",
            id="pre-existing",
        ),
        pytest.param(  # a new failure is this turn's
            [bash("pytest", PRE, 1), edit(), bash("pytest", NEW_FAIL, 1)],
            "partial",
            "1 failed, 30 passed",
            id="new-failure",
        ),
        pytest.param(  # the failing test is in a file the turn changed: not pre-existing
            [bash("pytest", PRE, 1), edit("tests/test_io.py"), edit(), bash("pytest", PRE_AFTER, 1)],
            "partial",
            "1 failed, 30 passed",
            id="failing-test-in-a-changed-file",
        ),
        pytest.param(  # the target (test_separable for separable.py) failing before and after: a failure
            [bash("pytest", NEW_FAIL, 1), edit(), bash("pytest", NEW_FAIL, 1)],
            "partial",
            "1 failed, 30 passed",
            id="target-still-failing",
        ),
        pytest.param(  # tests ran, then the code changed again: no run after the last edit
            [edit(), bash("pytest", PASS), edit()],
            "unverified",
            None,
            id="edit-after-the-run",
        ),
        pytest.param(  # the covering run failed; a later run of unrelated tests passed: the covering one wins
            [
                edit(),
                bash("pytest tests/test_separable.py", NEW_FAIL, 1),
                bash("pytest tests/test_io.py", PASS),
            ],
            "partial",
            "1 failed, 30 passed",
            id="covering-run-weighs-more",
        ),
        pytest.param(  # without a covering run, the last run decides
            [edit(), bash("pytest tests/test_io.py", NEW_FAIL, 1), bash("pytest tests/test_other.py", PASS)],
            "fixed",
            "31 passed",
            id="no-covering-run",
        ),
        pytest.param(  # a test file written for the turn and deleted again is no evidence
            [
                edit(),
                write("test_tmp.py"),
                bash("pytest test_tmp.py", "1 passed in 0.1s"),
                bash("rm test_tmp.py"),
            ],
            "unverified",
            None,
            id="scratch-test-file",
        ),
        pytest.param(  # a reproduction script after the last edit, with an expected-result line
            [
                bash("python reproduce.py", "Traceback (most recent call last):\nValueError: x", 1),
                edit(),
                bash("python reproduce.py", "result: [1, 2]\nIssue fixed!"),
            ],
            "fixed",
            "reproduce.py: Issue fixed!",
            id="reproduction-script-passes",
        ),
        pytest.param(  # ... whose exit status says it failed
            [edit(), bash("python reproduce.py", "Traceback (most recent call last):\nValueError: x", 1)],
            "partial",
            "reproduce.py: exit code 1 ValueError: x",
            id="reproduction-script-fails",
        ),
        pytest.param(  # ... that only prints values: no verdict, no test run
            [edit(), bash("python reproduce.py", "result: [1, 2]")],
            "unverified",
            None,
            id="reproduction-script-without-verdict",
        ),
        pytest.param(  # the script failing on purpose before the edit does not count; the run after does
            [bash("python repro.py", "AssertionError: bug present", 1), edit(), bash("pytest", PASS)],
            "fixed",
            "31 passed",
            id="script-before-the-edit",
        ),
    ],
)
def test_outcome_rules(events: list[dict[str, Any]], outcome: str, summary: str | None) -> None:
    assert outcome_of(*events) == (outcome, summary)


def test_a_failing_test_the_task_names_is_never_pre_existing() -> None:
    events = [bash("pytest", PRE, 1), edit(), bash("pytest", PRE_AFTER, 1)]
    turn = TurnEvent.model_validate(
        {"v": 1, "ts": 1.0, "owner": "o", "project_key": WS, "workspace": WS, "tool_events": events,
         "user_message": "test_env fails on CI, fix it"}
    )  # fmt: skip
    entry = extract(turn).entry
    assert entry is not None and entry.outcome == "partial"


def test_failing_test_ids_by_runner_format() -> None:
    output = "\n".join(
        [
            "FAILED tests/test_a.py::test_one - AssertionError",
            "ERROR tests/test_b.py::test_two",
            "FAIL: test_three (pkg.tests.TestX)",
            "--- FAIL: TestFour (0.00s)",
            "test five::six ... FAILED",
        ]
    )
    assert failing_tests(output) == {
        "tests/test_a.py::test_one",
        "tests/test_b.py::test_two",
        "test_three (pkg.tests.TestX)",
        "TestFour",
        "five::six",
    }


@pytest.mark.parametrize(
    ("command", "targets"),
    [
        ("pytest -q -k cstack tests/test_separable.py", ("tests/test_separable.py",)),
        ("python -m pytest --tb=short testing/test_capture.py::test_x", ("testing/test_capture.py::test_x",)),
        ("python tests/runtests.py sitemaps_tests --verbosity 2", ("sitemaps_tests",)),
        ("go test ./...", ()),
        ("pytest", ()),
    ],
)
def test_run_targets(command: str, targets: tuple[str, ...]) -> None:
    assert run_targets(parse_commands(command)[0]) == targets


@pytest.mark.parametrize(
    ("signature", "noise"),
    [
        ("pytest: command not found", True),
        ("make: *** No rule to make target 'test'.  Stop.", True),
        ("gmake[1]: Makefile: No such file or directory", True),
        ("bash: ./build/ponyc: No such file or directory", True),
        ("ERROR: Could not find a version that satisfies the requirement foo==9", True),
        ("ERROR: No matching distribution found for foo==9", True),
        ("ValueError: invalid literal for int()", False),
        ("FAILED tests/test_a.py::test_one - AssertionError", False),
        ("ModuleNotFoundError: No module named 'astropy'", False),
    ],
)
def test_environment_noise(signature: str, noise: bool) -> None:
    assert is_environment_noise(signature) is noise


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pip install -e .", True),
        ("python -m pip install numpy", True),
        ("sudo apt-get install -y llvm-dev", True),
        ("npm ci", True),
        ("pip list", False),
        ("python setup.py build", False),
    ],
)
def test_installs(command: str, expected: bool) -> None:
    assert installs(list(parse_commands(command)[0].words)) is expected


def test_an_install_failure_is_no_error_signature() -> None:
    failed = bash(
        "pip install foo==9", "ERROR: Exception:\nTraceback (most recent call last):\nOSError: disk", 1
    )
    turn = TurnEvent.model_validate(
        {"v": 1, "ts": 1.0, "owner": "o", "project_key": WS, "workspace": WS, "tool_events": [failed, edit()]}
    )
    entry = extract(turn).entry
    assert entry is not None and entry.errors == []
