"""Test runs: which commands run tests, and what their summaries say.

Pure. ``runner_of`` names the runner of one simple command (``pytest``, ``cargo``, ``jest`` …) or ``None``;
``parse_summary`` reads a runner's closing lines (``3 passed, 1 failed in 0.12s``, ``Ran 5 tests … OK``,
``Tests: 1 failed, 4 passed``, ``ok  \tpkg``, ``test result: ok. 5 passed; 0 failed``, ``BUILD SUCCESS`` …)
into a one-line summary and a verdict. The last summary line of an output wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workers.extraction.shell import Command

_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?$")
_NPM_LIKE = {"npm", "pnpm", "yarn", "bun"}
_DIRECT = {
    "pytest": "pytest",
    "py.test": "pytest",
    "tox": "tox",
    "nox": "nox",
    "jest": "jest",
    "vitest": "vitest",
    "mocha": "mocha",
    "rspec": "rspec",
    "phpunit": "phpunit",
    "ctest": "ctest",
    "runtests.py": "runtests",
    "nosetests": "nose",
    "trial": "trial",
    "prove": "prove",
    "gotestsum": "go",
    "ava": "ava",
    "tap": "tap",
}


def runner_of(cmd: Command) -> str | None:
    """The test runner a simple command starts, or ``None`` when it runs no tests."""
    argv = list(cmd.words)
    if not argv:
        return None
    path = argv[0]
    program = path.rsplit("/", 1)[-1]
    args = argv[1:]
    if program in _DIRECT:
        return _DIRECT[program]
    if path.endswith("bin/test") or path in {"./test", "./runtests", "./run_tests.sh", "./test.sh"}:
        return "script"
    if _PYTHON.match(program):
        while args and args[0].startswith("-") and args[0] != "-m":
            args = args[2:] if args[0] in {"-W", "-X"} else args[1:]
        if args[:1] == ["-m"] and len(args) > 1:
            module = args[1]
            return {
                "pytest": "pytest",
                "unittest": "unittest",
                "tox": "tox",
                "nox": "nox",
                "nose": "nose",
            }.get(module, "django" if module == "django" and "test" in args else None)
        if args and args[0].endswith(("runtests.py", "run_tests.py")):
            return "runtests"
        if args and args[0].endswith("manage.py") and "test" in args[1:2]:
            return "django"
        return None
    if program in _NPM_LIKE:
        if (
            args[:1] in (["test"], ["t"])
            or args[:2] == ["run", "test"]
            or (args[:1] == ["run"] and "test" in args[1:2])
        ):
            return program
        if program == "bun" and args[:1] == ["test"]:
            return "bun"
        if args[:1] and args[0] in {"jest", "vitest", "mocha"}:
            return args[0]
        return None
    if (program in {"node", "deno"} and "--test" in args) or (program == "deno" and args[:1] == ["test"]):
        return "node" if program == "node" else "deno"
    if program == "go" and args[:1] == ["test"]:
        return "go"
    if program == "cargo" and (args[:1] == ["test"] or args[:2] == ["nextest", "run"]):
        return "cargo"
    if program in {"mvn", "mvnw", "./mvnw"} and {"test", "verify", "install", "package"} & set(args):
        return "maven"
    if program in {"gradle", "gradlew"} and any(
        a in {"test", "check", "build"} or a.endswith(":test") for a in args
    ):
        return "gradle"
    if program == "dotnet" and args[:1] == ["test"]:
        return "dotnet"
    if program == "bundle" and args[:2] in (["exec", "rspec"], ["exec", "rake"]):
        return "rspec" if args[1] == "rspec" else "rake"
    if program in {"make", "gmake"} and {"test", "check", "tests"} & set(args):
        return "make"
    return None


@dataclass(frozen=True)
class RunSummary:
    """A runner's verdict: its closing line(s) in one line, and whether it passed (``None``: unknown)."""

    text: str
    ok: bool | None


_COUNT = r"\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)"
_PYTEST = re.compile(rf"^=*\s*((?:{_COUNT})(?:, {_COUNT})*)(?: in [\d.]+s(?: \([\d:]+\))?)?\s*=*$")
_PYTEST_NONE = re.compile(r"^=*\s*no tests ran(?: in [\d.]+s)?\s*=*$")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \((.*)\))?$")
_JEST = re.compile(r"^Tests:\s+(.+ total)$")
_VITEST = re.compile(r"^\s*Tests\s+(.+\(\d+\))$")
_MOCHA = re.compile(r"^\s*(\d+) (passing|failing|pending)(?: \(.+\))?$")
_NODE = re.compile(r"^(?:#|ℹ) (tests|pass|fail|cancelled|skipped|todo) (\d+)$")
_GO = re.compile(r"^(ok|FAIL)\s+((?!\[)\S+)\s+(?:[\d.]+s|\(cached\)|\[[\w ]+\])")
_CARGO = re.compile(r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed;")
_NEXTEST = re.compile(r"^\s*Summary \[.+\] (\d+ tests? run: .+)$")
_MAVEN = re.compile(r"^\[(?:INFO|ERROR|WARNING)\] (BUILD SUCCESS|BUILD FAILURE)$")
_MAVEN_COUNTS = re.compile(
    r"^\[(?:INFO|ERROR|WARNING)\] (Tests run: \d+, Failures: \d+, Errors: \d+, Skipped: \d+)$"
)
_GRADLE = re.compile(r"^(BUILD SUCCESSFUL|BUILD FAILED)(?: in .+)?$")
_DOTNET = re.compile(r"^(Passed!|Failed!)\s+-\s+(Failed:\s+\d+, Passed:\s+\d+.*?)(?:\s+-\s+.*)?$")
_RSPEC = re.compile(r"^(\d+ examples?, (\d+) failures?.*)$")
_PHPUNIT_OK = re.compile(r"^OK \((\d+ tests?, \d+ assertions?)\)$")
_PHPUNIT_FAIL = re.compile(r"^(Tests: \d+, Assertions: \d+, (?:Failures|Errors): .+)$")
_CTEST = re.compile(r"^(\d+% tests passed, (\d+) tests? failed out of \d+)$")
_TOX = re.compile(
    r"^\s*(congratulations :\)|\S+: commands succeeded|ERROR:\s+\S+: commands failed|"
    r"\S+: OK \(|\S+: FAIL code)"
)
_PLAIN = re.compile(r"^(?:\w+: )?(\d+ passed, (\d+) failed(?:, \d+ skipped)?)$")


def _pytest_verdict(text: str) -> bool:
    return not re.search(r"\d+ (?:failed|errors?)\b", text)


def parse_summary(output: str) -> RunSummary | None:
    """The verdict of the last summary an output holds, or ``None`` when it holds none."""
    lines = output.replace("\r\n", "\n").split("\n")
    found: RunSummary | None = None
    node: dict[str, int] = {}
    cargo, cargo_ok = [0, 0], True  # cargo prints one result per test binary (unit, integration, doc)
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if match := _CARGO.match(line):
            cargo = [a + int(b) for a, b in zip(cargo, (match.group(2), match.group(3)), strict=True)]
            cargo_ok = cargo_ok and match.group(1) == "ok"
            found = RunSummary(
                f"test result: {'ok' if cargo_ok else 'FAILED'}. {cargo[0]} passed; {cargo[1]} failed",
                cargo_ok,
            )
            continue
        summary = _summary_of(line, lines, index)
        if summary is not None and not (summary.text in {"PASS", "FAIL"} and found is not None):
            found = summary
            continue
        if match := _NODE.match(line):
            node[match.group(1)] = int(match.group(2))
            if "fail" in node and "pass" in node:
                fails = node["fail"] + node.get("cancelled", 0)
                found = RunSummary(
                    f"{node.get('tests', 0)} tests, {node['pass']} passed, {fails} failed", fails == 0
                )
    return found


# Every pattern ``_summary_of`` tries, as one alternation: most lines of a runner's output match none, and
# one C-level match says so faster than trying each pattern in Python (docs/performance.md, "Changes made").
_ANY_SUMMARY = re.compile(
    "|".join(
        f"(?:{p.pattern})"
        for p in (
            _PYTEST, _PYTEST_NONE, _UNITTEST_RAN, _JEST, _VITEST, _MOCHA, _NEXTEST, _MAVEN, _GRADLE,
            _DOTNET, _RSPEC, _PHPUNIT_OK, _PHPUNIT_FAIL, _CTEST, _TOX, _PLAIN, _GO,
        )
    )
)  # fmt: skip


def _summary_of(line: str, lines: list[str], index: int) -> RunSummary | None:
    match: re.Match[str] | None
    if line not in {"PASS", "FAIL"} and not _ANY_SUMMARY.match(line):
        return None
    if match := _PYTEST.match(line):
        return RunSummary(match.group(1), _pytest_verdict(match.group(1)))
    if _PYTEST_NONE.match(line):
        return RunSummary("no tests ran", None)
    if match := _UNITTEST_RAN.match(line):
        for following in lines[index + 1 : index + 6]:
            end = _UNITTEST_END.match(following.strip())
            if end:
                detail = f" ({end.group(2)})" if end.group(2) else ""
                return RunSummary(f"Ran {match.group(1)} tests: {end.group(1)}{detail}", end.group(1) == "OK")
        return None
    if match := _JEST.match(line):
        return RunSummary(f"Tests: {match.group(1)}", "failed" not in match.group(1))
    if match := _VITEST.match(line):
        return RunSummary(f"Tests {match.group(1)}", "failed" not in match.group(1))
    if match := _MOCHA.match(line):
        if match.group(2) == "failing":
            return RunSummary(f"{match.group(1)} failing", int(match.group(1)) == 0)
        if match.group(2) == "passing":
            nxt = next((s.strip() for s in lines[index + 1 : index + 4] if _MOCHA.match(s.strip())), "")
            if "failing" in nxt:
                return None  # the failing line that follows decides
            return RunSummary(f"{match.group(1)} passing", True)
    if match := _NEXTEST.match(line):
        return RunSummary(match.group(1), "failed" not in match.group(1))
    if match := _MAVEN.match(line):
        counts = next(
            (m.group(1) for s in lines[index::-1][:80] if (m := _MAVEN_COUNTS.match(s.strip()))), ""
        )
        return RunSummary(
            f"{match.group(1)}" + (f" ({counts})" if counts else ""), match.group(1) == "BUILD SUCCESS"
        )
    if match := _GRADLE.match(line):
        return RunSummary(match.group(1), match.group(1) == "BUILD SUCCESSFUL")
    if match := _DOTNET.match(line):
        return RunSummary(f"{match.group(1)} {match.group(2)}".strip(), match.group(1) == "Passed!")
    if match := _RSPEC.match(line):
        return RunSummary(match.group(1), int(match.group(2)) == 0)
    if match := _PHPUNIT_OK.match(line):
        return RunSummary(f"OK ({match.group(1)})", True)
    if match := _PHPUNIT_FAIL.match(line):
        return RunSummary(match.group(1), False)
    if match := _CTEST.match(line):
        return RunSummary(match.group(1), int(match.group(2)) == 0)
    if match := _TOX.match(line):
        passed = "congratulations" in line or "succeeded" in line or ": OK (" in line
        return RunSummary(line.strip(), passed)
    if match := _PLAIN.match(line):
        return RunSummary(match.group(1), int(match.group(2)) == 0)
    if match := _GO.match(line):
        return RunSummary(re.sub(r"\s+", " ", line), match.group(1) == "ok")
    if line in {"PASS", "FAIL"} and _looks_like_go(lines, index):
        return RunSummary(line, line == "PASS")
    return None


def _looks_like_go(lines: list[str], index: int) -> bool:
    window = lines[max(0, index - 30) : index + 3]
    return any(s.startswith(("=== RUN", "--- PASS", "--- FAIL", "ok  ", "FAIL\t")) for s in window)


# Failing test ids, by runner format: pytest's short summary, unittest/Django, Go, cargo, jest/vitest.
_FAILING = (
    re.compile(r"^(?:FAILED|ERROR) (\S+::\S+?)(?: - .*)?$"),
    re.compile(r"^(?:FAIL|ERROR): (\w+ \([\w.]+\))"),
    re.compile(r"^\s*--- FAIL: (\S+)"),
    re.compile(r"^test (\S+) \.\.\. FAILED$"),
    re.compile(r"^\s*[✕×] (.+?)(?: \(\d+ ?m?s\))?$"),
)
_MAX_FAILING = 500


def failing_tests(output: str) -> frozenset[str]:
    """The ids of the tests an output reports failing (pytest, unittest, Go, cargo, jest formats)."""
    if "FAIL" not in output and "ERROR" not in output and "✕" not in output and "×" not in output:
        return frozenset()
    found: set[str] = set()
    for raw in output.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        for pattern in _FAILING:
            if match := pattern.match(line):
                found.add(match.group(1))
                break
        if len(found) >= _MAX_FAILING:
            break
    return frozenset(found)


# Runner flags that take a value (``-k expr``): their value is no target.
_VALUE_FLAGS = {
    "-k", "-m", "-p", "-n", "-c", "-o", "-W", "-x", "--tb", "--settings", "--verbosity", "--rootdir",
    "--timeout", "--durations", "--parallel", "--run", "-run", "--testNamePattern", "-t", "--config",
    "--maxfail", "--deselect", "--ignore",
}  # fmt: skip


def run_targets(cmd: Command) -> tuple[str, ...]:
    """What a test command names to run (paths, node ids, modules, labels); () for the whole suite."""
    argv = list(cmd.words)
    if not argv:
        return ()
    args = argv[1:]
    if _PYTHON.match(argv[0].rsplit("/", 1)[-1]):
        while args and args[0].startswith("-") and args[0] != "-m":
            args = args[1:]
        args = args[2:] if args[:1] == ["-m"] else args[1:]  # ``-m pytest`` or the script
    elif argv[0].rsplit("/", 1)[-1] in {"go", "cargo", "npm", "pnpm", "yarn", "bun", "make", "gmake"}:
        args = args[1:]  # the subcommand (``go test``, ``cargo test``, ``npm test``)
    targets: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUE_FLAGS:
            skip = True
        elif not arg.startswith("-") and arg not in {"./...", "...", "."}:
            targets.append(arg)
    return tuple(targets)
