"""Test commands and summary lines (the real-output corpus is in test_runner_fixtures.py)."""

from __future__ import annotations

import pytest

from ingest.schema import ToolEvent
from workers.extraction import Limits
from workers.extraction.outcome import _RUNNER_WORDS, run_of
from workers.extraction.shell import parse_commands
from workers.extraction.testruns import parse_summary, runner_of


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("pytest -q", "pytest"),
        ("py.test tests/", "pytest"),
        ("python -m pytest -x", "pytest"),
        ("python3.11 -W ignore -m pytest", "pytest"),
        ("uv run pytest", "pytest"),
        ("python -m unittest discover", "unittest"),
        ("tox -e py311", "tox"),
        ("nox -s tests", "nox"),
        ("python manage.py test app", "django"),
        ("python tests/runtests.py utils_tests", "runtests"),
        ("./runtests.py", "runtests"),
        ("bin/test", "script"),
        ("npm test", "npm"),
        ("npm run test -- --watch=false", "npm"),
        ("pnpm test", "pnpm"),
        ("yarn test", "yarn"),
        ("bun test", "bun"),
        ("npx jest src", "jest"),
        ("npx vitest run", "vitest"),
        ("mocha", "mocha"),
        ("node --test", "node"),
        ("go test ./...", "go"),
        ("cargo test --offline", "cargo"),
        ("cargo nextest run", "cargo"),
        ("mvn -B test", "maven"),
        ("./gradlew test", "gradle"),
        ("gradle :app:test", "gradle"),
        ("dotnet test", "dotnet"),
        ("bundle exec rspec", "rspec"),
        ("rspec spec/a_spec.rb", "rspec"),
        ("vendor/bin/phpunit", "phpunit"),
        ("ctest --output-on-failure", "ctest"),
        ("make test", "make"),
        ("make check", "make"),
        ("make", None),
        ("python reproduce.py", None),
        ("python3 test_fix.py", None),
        ("npm install", None),
        ("cargo build", None),
        ("go build ./...", None),
        ("cat pytest.ini", None),
        ("echo pytest", None),
    ],
)
def test_runner_of(command: str, runner: str | None) -> None:
    assert runner_of(parse_commands(command)[0]) == runner


@pytest.mark.parametrize(
    ("output", "summary", "ok"),
    [
        ("== 3 passed, 1 failed in 0.12s ==", "3 passed, 1 failed", False),
        ("3 passed, 2 warnings in 1.00s", "3 passed, 2 warnings", True),
        ("== 1 passed, 1 error in 0.2s ==", "1 passed, 1 error", False),
        ("Ran 5 tests in 0.010s\n\nOK", "Ran 5 tests: OK", True),
        ("Ran 5 tests in 0.010s\n\nOK (skipped=1)", "Ran 5 tests: OK (skipped=1)", True),
        (
            "Ran 5 tests in 0.010s\n\nFAILED (failures=1, errors=2)",
            "Ran 5 tests: FAILED (failures=1, errors=2)",
            False,
        ),
        ("Tests:       1 failed, 4 passed, 5 total", "Tests: 1 failed, 4 passed, 5 total", False),
        ("ok  \texample.com/pkg\t0.01s", "ok example.com/pkg 0.01s", True),
        ("ok  \texample.com/pkg\t(cached)", "ok example.com/pkg (cached)", True),
        ("FAIL\texample.com/pkg\t0.01s\nFAIL", "FAIL example.com/pkg 0.01s", False),
        ("test result: ok. 5 passed; 0 failed; 0 ignored", "test result: ok. 5 passed; 0 failed", True),
        ("[INFO] BUILD SUCCESS", "BUILD SUCCESS", True),
        ("BUILD FAILED in 2s", "BUILD FAILED", False),
        ("100% tests passed, 0 tests failed out of 3", "100% tests passed, 0 tests failed out of 3", True),
        ("5 examples, 0 failures", "5 examples, 0 failures", True),
        ("tests: 4 passed, 1 failed", "4 passed, 1 failed", False),
        ("no tests ran in 0.01s", "no tests ran", None),
        ("nothing to see here", None, None),
        ("== 2 passed in 0.1s ==\nrerun:\n== 1 failed in 0.1s ==", "1 failed", False),
    ],
)
def test_parse_summary(output: str, summary: str | None, ok: bool | None) -> None:
    found = parse_summary(output)
    if summary is None:
        assert found is None
        return
    assert found is not None
    assert (found.text, found.ok) == (summary, ok)


@pytest.mark.parametrize(
    ("command", "output", "exit_code", "expected"),
    [
        # the exit code decides when it belongs to the runner
        ("pytest -q", "1 passed in 0.1s", 1, False),
        ("cd /x && pytest", "", 0, True),
        ("pytest && echo done", "1 failed in 0.1s", 1, False),
        # piped or followed by other commands: the summary decides
        ("pytest -q | tail -3", "== 1 failed in 0.1s ==", 0, False),
        ("pytest -q || true", "== 2 passed in 0.1s ==", 0, True),
        ("pytest; echo $?", "== 2 passed in 0.1s ==\n0", 0, True),
        # no exit code (SWE-agent, Aider): the summary decides
        ("pytest", "== 2 passed in 0.1s ==", None, True),
        ("pytest", "== 1 failed in 0.1s ==", None, False),
        # not a test run at all
        ("pytest", "bash: pytest: command not found", 127, None),
        ("python -m pytest", "/usr/bin/python: No module named pytest", 1, None),
        ("pytest", "no tests ran in 0.01s", 5, None),
        ("pytest", "", None, None),
        ("python reproduce.py", "All tests passed!", 0, None),
    ],
)
def test_run_of(command: str, output: str, exit_code: int | None, expected: bool | None) -> None:
    event = ToolEvent(tool="bash", input={"command": command}, output=output, exit_code=exit_code)
    run = run_of(event, Limits())
    assert (run.ok if run else None) is expected


def test_the_harness_ok_flag_is_the_last_resort() -> None:
    event = ToolEvent(tool="Bash", input={"command": "npm test"}, output="weird output", ok=False)
    run = run_of(event, Limits())
    assert run is not None and run.ok is False


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q",
        "npm t",
        "mvn -B verify",
        "./gradlew build",
        "vendor/bin/phpunit",
        "bundle exec rake",
        "prove -l t/",
        "npx ava",
        "tox",
        "nox",
        "python -m unittest",
        "make check",
        "bin/test",
    ],
)
def test_the_cheap_runner_word_test_never_hides_a_runner(command: str) -> None:
    assert runner_of(parse_commands(command)[0]) is not None
    assert any(word in command for word in _RUNNER_WORDS)
