"""REAL runner output (tests/fixtures/runners, made by make_fixtures.py) → runner, verdict, summary, errors.

Each row is one captured run of a real runner on a tiny passing or failing project; ``handwritten/`` rows
are for runners that cannot be installed here and say so in their first line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.schema import ToolEvent, TurnEvent
from workers.extraction import Limits, extract
from workers.extraction.outcome import run_of
from workers.extraction.turn import collect_errors

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runners"
HEADER = "# fixmem fixture:"


def _load(name: str) -> tuple[str, dict[str, object]]:
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    folder = FIXTURES
    if name not in manifest:
        manifest = json.loads((FIXTURES / "handwritten" / "manifest.json").read_text())
        folder = FIXTURES / "handwritten"
    text = (folder / f"{name}.txt").read_text()
    if text.startswith(HEADER):
        text = text.split("\n", 1)[1]
    return text, manifest[name]


def _event(name: str) -> ToolEvent:
    text, meta = _load(name)
    return ToolEvent.model_validate(
        {
            "tool": "bash",
            "input": {"command": meta["command"]},
            "output": text,
            "exit_code": meta["exit_code"],
        }
    )


# name: (runner or None when it is no test run, ok, summary)
RUNS = {
    "pytest-pass": ("pytest", True, "2 passed"),
    "pytest-fail": ("pytest", False, "2 failed"),
    "pytest-q-fail": ("pytest", False, "2 failed"),
    "pytest-chained": ("pytest", False, "1 failed"),
    "pytest-collect-error": ("pytest", False, "1 error"),
    "pytest-no-tests": (None, None, None),
    "unittest-pass": ("unittest", True, "Ran 2 tests: OK"),
    "unittest-fail": ("unittest", False, "Ran 2 tests: FAILED (failures=2)"),
    "unittest-error": ("unittest", False, "Ran 1 tests: FAILED (errors=1)"),
    "python-traceback": (None, None, None),
    "node-test-pass": ("node", True, "2 tests, 2 passed, 0 failed"),
    "node-test-fail": ("node", False, "2 tests, 0 passed, 2 failed"),
    "node-test-spec-fail": ("node", False, "2 tests, 0 passed, 2 failed"),
    "node-typeerror": (None, None, None),
    "cargo-test-pass": ("cargo", True, "test result: ok. 2 passed; 0 failed"),
    "cargo-test-fail": ("cargo", False, "test result: FAILED. 0 passed; 2 failed"),
    "cargo-test-compile-error": ("cargo", False, "exit code 101"),
    "go-test-pass": ("go", True, "ok example.com/calc 0.003s"),
    "go-test-fail": ("go", False, "FAIL example.com/calc 0.005s"),
    "go-test-v-fail": ("go", False, "FAIL example.com/calc 0.005s"),
    "go-build-error": ("go", False, "FAIL example.com/calc [build failed]"),
    "jest-pass": ("jest", True, "Tests: 2 passed, 2 total"),
    "jest-fail": ("jest", False, "Tests: 2 failed, 2 total"),
    "vitest-fail": ("vitest", False, "Tests 2 failed (2)"),
    "mocha-pass": ("mocha", True, "2 passing"),
    "mocha-fail": ("mocha", False, "2 failing"),
    "tsc-error": (None, None, None),
    "maven-pass": ("maven", True, "BUILD SUCCESS (Tests run: 1, Failures: 0, Errors: 0, Skipped: 0)"),
    "maven-fail": ("maven", False, "BUILD FAILURE (Tests run: 1, Failures: 1, Errors: 0, Skipped: 0)"),
    "java-exception": (None, None, None),
    "gcc-error": (None, None, None),
    "ctest-fail": ("ctest", False, "50% tests passed, 1 tests failed out of 2"),
    "make-test-fail": ("make", False, "2 failed"),
    "command-not-found": (None, None, None),
    "rspec-fail": ("rspec", False, "3 examples, 1 failure"),
    "phpunit-pass": ("phpunit", True, "OK (2 tests, 2 assertions)"),
    "phpunit-fail": ("phpunit", False, "Tests: 2, Assertions: 2, Failures: 1."),
    "dotnet-fail": ("dotnet", False, "Failed! Failed: 1, Passed: 1, Skipped: 0, Total: 2, Duration: 15 ms"),
    "gradle-fail": ("gradle", False, "BUILD FAILED"),
    "nextest-fail": ("cargo", False, "2 tests run: 1 passed, 1 failed, 0 skipped"),
    "tox-pass": ("tox", True, "congratulations :) (1.60 seconds)"),
}

ERRORS = {
    "pytest-pass": [],
    "pytest-fail": ["test_calc.py::test_add - assert -# == #", "test_calc.py::test_timeout - assert # == #"],
    "pytest-chained": [
        "ValueError: timeout after # seconds",
        "test_net.py::test_connect - RuntimeError: could not connect",
    ],
    "pytest-collect-error": ["ModuleNotFoundError: No module named 'missing_module'"],
    "unittest-fail": [
        "FAIL: test_add (test_calc.AddTests.test_add)",
        "AssertionError: -# != #",
        "FAIL: test_neg (test_calc.AddTests.test_neg)",
        "AssertionError: # != -#",
    ],
    "unittest-error": ["ERROR: test_key (test_broken.Broken.test_key)", "KeyError: 'missing'"],
    "python-traceback": [
        "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: column # (char #)"
    ],
    "node-test-fail": ["Expected values to be strictly equal:"],
    "node-test-spec-fail": ["AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:"],
    "node-typeerror": ["TypeError: Cannot read properties of undefined (reading 'name')"],
    "cargo-test-fail": [
        "thread 'tests::adds' panicked at src/lib.rs: assertion `left == right` failed",
        "thread 'tests::adds_negatives' panicked at src/lib.rs: assertion `left == right` failed",
    ],
    "cargo-test-compile-error": ["error[E0308]: mismatched types"],
    "go-test-fail": [
        "--- FAIL: TestAdd",
        "calc_test.go: Add(#, #) = -#, want #",
        "--- FAIL: TestPanics",
        "panic: assignment to entry in nil map [recovered]",
    ],
    "go-build-error": ["./calc.go: undefined: c"],
    "jest-fail": ["● add › adds numbers", "● add › adds negatives"],
    "vitest-fail": [
        "AssertionError: expected -# to be # // Object.is equality",
        "AssertionError: expected +# to be -# // Object.is equality",
    ],
    "mocha-fail": ["AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:"],
    "tsc-error": ["error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'."],
    "maven-fail": [
        "org.opentest4j.AssertionFailedError: expected: <#> but was: <-#>",
        "CalcTest.adds expected: <#> but was: <-#>",
    ],
    "java-exception": [
        'Exception in thread "main" java.lang.IllegalStateException: pool exhausted after # attempts'
    ],
    "gcc-error": ["main.c: error: ‘undefined_name’ undeclared (first use in this function)"],
    "ctest-fail": ["subtracts (Failed)"],
    "command-not-found": [],  # the environment's, not the fix's (issue #16): no error signature
    "rspec-fail": ["expect(Calc.add(-#, -#)).to eq(-#)"],
    "phpunit-fail": ["Failed asserting that # is identical to -#."],
    "dotnet-fail": ["Failed Calc.Tests.CalcTests.AddsNegatives"],
    "gradle-fail": ["CalcTest > addsNegatives()"],
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_runner_output_gives_runner_verdict_and_summary(name: str) -> None:
    runner, ok, summary = RUNS[name]
    run = run_of(_event(name), Limits())
    if runner is None:
        assert run is None
        return
    assert run is not None
    assert (run.runner, run.ok, run.summary) == (runner, ok, summary)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_runner_output_gives_error_signatures(name: str) -> None:
    assert collect_errors([_event(name)], "/work/proj", Limits()) == ERRORS[name]


def test_every_fixture_is_in_the_table() -> None:
    names = {p.stem for p in FIXTURES.glob("*.txt")} | {
        p.stem for p in (FIXTURES / "handwritten").glob("*.txt")
    }
    assert names == set(RUNS)


@pytest.mark.parametrize(
    ("first", "last", "outcome"),
    [
        ("pytest-fail", "pytest-pass", "fixed"),
        ("pytest-pass", "pytest-fail", "partial"),
        ("cargo-test-fail", "cargo-test-pass", "fixed"),
        ("node-test-pass", "node-test-fail", "partial"),
        ("go-test-fail", "go-test-pass", "fixed"),
        # exit 127 is no test run, and the failing run came before the edit: no run after the last edit
        ("pytest-fail", "command-not-found", "unverified"),
        ("pytest-pass", "pytest-no-tests", "unverified"),  # "no tests ran" is no test run
    ],
)
def test_the_last_real_run_decides_the_outcome(first: str, last: str, outcome: str) -> None:
    edit = {
        "tool": "Edit",
        "input": {"file_path": "/work/proj/calc.py", "old_string": "a - b", "new_string": "a + b"},
    }
    events = [_event(first).model_dump(), edit, _event(last).model_dump()]
    turn = TurnEvent.model_validate(
        {"v": 1, "ts": 1.0, "owner": "o", "project_key": "/work/proj", "tool_events": events}
    )
    entry = extract(turn).entry
    assert entry is not None
    assert entry.outcome == outcome
    assert entry.files == ["calc.py"]
