"""The turn's deciding test run and its outcome.

Pure. A **test run** is a shell call whose command line contains a test-runner command
(``testruns.runner_of``) and that actually ran (exit 126/127, "command not found", "No module named …" and
runs that collected no tests do not count), or a **reproduction script** run (``python reproduce.py``: a
script named like one, or one the turn created and deleted) whose exit status or an explicit
expected-result line gives a verdict (``script_run_of``). A runner's ``ok`` comes from the exit code when
it belongs to the runner (the runner is the line's last command, not piped into ``tail``), else from the
summary text, else from the harness's ``ok`` flag.

The deciding run (``decide_run``):

1. only runs **after the last edit** of the turn's files count (``FilesResult.edit_span``); when no edit
   was seen (the harness's file list only), every run counts;
2. a runner's run of test files the turn wrote and deleted again is no evidence;
3. among the runs left, the last one that **covers the changed code** wins (the whole suite, or a target
   naming a changed file's stem or directory: ``tests/test_separable.py`` for ``modeling/separable.py``);
   without one, the last run;
4. a failing run whose failing tests all failed before the first edit too (same ids) and that passed
   others is a pass: those failures are **pre-existing** — unless one of them may be the turn's target (in
   a file the turn changed, naming a changed module such as ``test_mod4`` for ``src/mod4.py``, or named
   in the task): a target that still fails is this turn's failure.

Outcome: ``fixed`` (tests ran after the last edit and passed, pre-existing failures aside), ``partial``
(they ran after the last edit and failed), ``unverified`` (no test run after the last edit, or the harness
downgraded the turn: ``gate_downgraded`` or ``stop_reason == "complete_unverified"``).
``harness_meta.tests`` overrides the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ingest.schema import HarnessMeta, ToolEvent
from store.entry import Outcome, TestRun
from workers.extraction.calls import Call, classify
from workers.extraction.limits import Limits, WordSet
from workers.extraction.shell import Command, parse_commands
from workers.extraction.testruns import (
    RunSummary,
    failing_tests,
    parse_summary,
    run_targets,
    runner_of,
)
from workers.extraction.tools import Family

_DID_NOT_RUN = re.compile(
    r"command not found|No module named '?(?:pytest|unittest|nose|tox|nox)|: not found$|"
    r"No such file or directory$|Unknown command|Missing script: \"?test|ERROR: file or directory not found|"
    r"error: no such command|is not recognized as",
    re.MULTILINE,
)


_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?$")
_REPRO_NAME = re.compile(r"(?:^|_)(?:repro|reproduce|reproduction|bug|issue|verify|check)", re.IGNORECASE)
# A reproduction script's explicit expected-result line (looked for in the last 4,000 characters).
_SCRIPT_FAIL = re.compile(
    r"^Traceback \(most recent call last\)|^\w*(?:Error|Exception): |\bFAIL(?:ED|URE)?\b|"
    r"\b(?:bug|issue|problem|error) (?:still )?(?:present|exists|persists|reproduced)\b|\bnot fixed\b|"
    r"\btest(?:s)? failed\b",
    re.MULTILINE | re.IGNORECASE,
)
_SCRIPT_PASS = re.compile(
    r"\b(?:all )?tests? passed\b|\bpass(?:ed)?[.!:]?$|\bsuccess(?:ful(?:ly)?)?\b|\b(?:issue|bug|problem) "
    r"(?:is )?(?:fixed|resolved)\b|\bworks? (?:correctly|as expected)\b|^OK[.!]?$|✓|✅",
    re.MULTILINE | re.IGNORECASE,
)
_GENERIC_WORDS = frozenset({
    "src", "lib", "libs", "pkg", "app", "tests", "test", "testing", "spec", "specs", "utils", "util", "core",
    "common", "internal", "__init__", "index", "main", "mod", "init", "base", "conftest",
})  # fmt: skip

# Every runner ``runner_of`` knows has one of these in its command line (a cheap first test).
_RUNNER_WORDS = WordSet(
    (
        "test",
        "tox",
        "nox",
        "jest",
        "mocha",
        "spec",
        "check",
        "phpunit",
        "trial",
        "prove",
        "ava",
        "tap",
        "mvn",
        "gradle",
        "rake",
        "npm t",
        "yarn t",
        "pnpm t",
        "bun t",
    )
)


@dataclass(frozen=True)
class Run:
    """One test run found in the turn: a runner's, or a reproduction script's (``script``)."""

    runner: str
    command: str
    ok: bool
    summary: str
    index: int = -1  # of the tool event in the turn
    failing: frozenset[str] = frozenset()  # ids of the tests it reports failing
    targets: tuple[str, ...] = ()  # what it names to run; () for the whole suite
    script: bool = False


@dataclass(frozen=True)
class EditEvidence:
    """What the turn changed, to judge its runs by: its files, the event indexes of its first and last
    change to them (None when unknown), the files it created and deleted again, and its task."""

    files: tuple[str, ...] = ()
    span: tuple[int, int] | None = None
    scratch: frozenset[str] = frozenset()
    task: str = ""  # the user's request: a failing test it names is the turn's target


def _runner_command(command: str) -> tuple[Command | None, bool]:
    """The runner's simple command in ``command`` and whether the line's exit status is the runner's."""
    commands = parse_commands(command)
    found: Command | None = None
    owns = False
    for position, cmd in enumerate(commands):
        if runner_of(cmd) is None:
            continue
        found = cmd
        after = commands[position + 1 :]
        harmless = all(c.argv[:1] in (["echo"], ["printf"], ["true"]) for c in after)
        owns = not cmd.piped and (not after or (cmd.separator == "&&" and harmless))
    return found, owns


def run_of(event: ToolEvent, limits: Limits) -> Run | None:
    """The runner's test run one tool call is, or ``None``."""
    return _runner_run(Call(-1, event, limits))


def _runner_run(call: Call) -> Run | None:
    """``run_of`` of a classified call."""
    if call.family not in {Family.SHELL, Family.OTHER}:
        return None
    event, command = call.event, call.command
    if not command or not _RUNNER_WORDS.found_in(command):
        return None
    cmd, owns_exit = _runner_command(command)
    runner = runner_of(cmd) if cmd is not None else None
    if cmd is None or runner is None or event.exit_code in {126, 127}:
        return None
    output = call.window()
    summary: RunSummary | None = parse_summary(output)
    if summary is None and _DID_NOT_RUN.search(output[-4000:] if len(output) > 4000 else output):
        return None
    if summary is not None and summary.ok is None:
        return None  # "no tests ran"
    if event.exit_code is not None and owns_exit:
        ok = event.exit_code == 0
        if event.exit_code == 5 and runner == "pytest":
            return None
    elif summary is not None and summary.ok is not None:
        ok = summary.ok
    elif event.exit_code is not None:
        ok = event.exit_code == 0
    elif event.ok is not None:
        ok = event.ok
    else:
        return None
    text = (
        " ".join(summary.text.split())
        if summary
        else ("exit code " + str(event.exit_code) if event.exit_code is not None else "")
    )
    return Run(runner=runner, command=command, ok=ok, summary=text, targets=run_targets(cmd))


def script_run_of(event: ToolEvent, limits: Limits, scratch: frozenset[str] = frozenset()) -> Run | None:
    """The reproduction-script run one tool call is (``python reproduce.py``; a script named like one, or
    one the turn created and deleted), or ``None``. Its exit status and an explicit expected-result line
    decide: a non-zero exit or a failure line (``FAIL``, ``Bug still present``, a traceback) fails it; a
    success line (``Test passed``, ``Issue fixed``, ``OK``) with a zero exit passes it; a run that only
    prints values says nothing and is no test run."""
    return _script_run(Call(-1, event, limits), scratch)


def _script_run(call: Call, scratch: frozenset[str]) -> Run | None:
    """``script_run_of`` of a classified call."""
    event, command = call.event, call.command
    if call.family is not Family.SHELL or event.exit_code in {126, 127}:
        return None
    if ".py" not in command or (_RUNNER_WORDS.found_in(command) and _runner_command(command)[0] is not None):
        return None
    names = {name.rsplit("/", 1)[-1] for name in scratch}
    script = next((s for cmd in parse_commands(command) if (s := _script_of(cmd, names))), None)
    if script is None:
        return None
    tail = call.window()[-4000:]
    if "can't open file" in tail or _DID_NOT_RUN.search(tail):
        return None
    failed = event.exit_code not in {None, 0} or bool(_SCRIPT_FAIL.search(tail))
    if not failed and not _SCRIPT_PASS.search(tail):
        return None
    verdict = next(reversed(list((_SCRIPT_FAIL if failed else _SCRIPT_PASS).finditer(tail))), None)
    line = ""
    if verdict is not None:  # the whole line that says it
        start = tail.rfind("\n", 0, verdict.start()) + 1
        end = tail.find("\n", verdict.end())
        line = " ".join(tail[start : end if end >= 0 else len(tail)].split())[:120]
    status = f"exit code {event.exit_code}" if event.exit_code else ""
    summary = f"{script}: " + " ".join(p for p in (status, line) if p)
    return Run(runner="script", command=command, ok=not failed, summary=summary, script=True)


def _script_of(cmd: Command, scratch_names: set[str]) -> str | None:
    argv = list(cmd.words)
    if not argv or not _PYTHON.match(argv[0].rsplit("/", 1)[-1]):
        return None
    args = [a for a in argv[1:] if not a.startswith("-")]
    if not args or "-m" in argv[1:] or "-c" in argv[1:] or not args[0].endswith(".py"):
        return None
    name = args[0].rsplit("/", 1)[-1]
    return name if _REPRO_NAME.search(name) or name in scratch_names else None


def _run_at(calls: Sequence[Call], index: int, evidence: EditEvidence) -> Run | None:
    """The test run event ``index`` is, with its index; ``None`` for none, or for a runner's run of test
    files the turn wrote and deleted again (no evidence)."""
    call = calls[index]
    run = _runner_run(call) or _script_run(call, evidence.scratch)
    if run is None or (not run.script and _only_scratch(run, evidence.scratch)):
        return None
    return replace(run, index=index)


def _module_words(files: Sequence[str]) -> set[str]:
    words: set[str] = set()
    for path in files:
        parts = path.lower().split("/")
        stem = re.sub(r"^test_|_test$|\.(?:test|spec)$", "", parts[-1].rsplit(".", 1)[0])
        for word in (stem, parts[-2] if len(parts) > 1 else ""):
            if len(word) >= 3 and word not in _GENERIC_WORDS:
                words.add(word)
    return words


def covers(run: Run, files: Sequence[str]) -> bool:
    """Whether a run exercises the changed code: the whole suite, or a target naming a changed module (its
    file stem or its directory: ``test_separable.py`` for ``modeling/separable.py``). A script: no."""
    if run.script:
        return False
    if not run.targets:
        return True
    words = _module_words(files)
    return any(word in target.lower() for target in run.targets for word in words)


def covering_tests(tests: Sequence[str], files: Sequence[str]) -> list[str]:
    """The test ids of ``tests`` (``path-or-suite::name``) that exercise ``files``: in one of the files, or
    naming a changed module (its stem or its directory), as ``covers`` judges a run's targets."""
    words = _module_words(files)
    paths = tuple(f.rsplit(".", 1)[0].lower() for f in files)
    out = []
    for test in tests:
        lowered = test.lower()
        where = lowered.split("::", 1)[0]
        forms = {where.rsplit(".", 1)[0], where.replace(".", "/")} - {""}
        if any(f.endswith(p) or p.endswith("/" + f) for f in forms for p in paths) or any(
            w in lowered for w in words
        ):
            out.append(test)
    return out


def _only_scratch(run: Run, scratch: frozenset[str]) -> bool:
    """A runner's run of test files the turn wrote and deleted again: no evidence."""
    names = {name.rsplit("/", 1)[-1] for name in scratch}
    return bool(run.targets) and all(t.split("::", 1)[0].rsplit("/", 1)[-1] in names for t in run.targets)


def _passed_some(run: Run) -> bool:
    passed = re.search(r"(\d+) pass(?:ed|ing)", run.summary)
    ran = re.search(r"Ran (\d+) tests", run.summary)
    count = int(passed.group(1)) if passed else int(ran.group(1)) - len(run.failing) if ran else 0
    return count > 0


def _related(failing: frozenset[str], evidence: EditEvidence) -> bool:
    """Whether failing tests may be the turn's own target: in a file it changed, naming a changed module
    (``test_mod4`` for ``src/mod4.py``), or named in the task. Those are never pre-existing."""
    touched = tuple(evidence.files)
    words = _module_words(evidence.files)
    task = evidence.task.lower()
    for test in failing:
        lowered = test.lower()
        name = re.split(r"::|\s|\(", lowered.rsplit("::", 1)[-1])[0]
        if (
            ("::" in test and test.split("::", 1)[0].endswith(touched))
            or any(word in lowered for word in words)
            or (len(name) >= 4 and name in task)
        ):
            return True
    return False


def decide_run(
    events: Sequence[ToolEvent], limits: Limits, evidence: EditEvidence, calls: Sequence[Call] | None = None
) -> Run | None:
    """The run that decides the outcome (the module docstring's rules), ``ok`` already corrected for
    pre-existing failures; ``None`` when no run came after the last edit. Reads the runs from the end
    back to the last edit, stopping at the first covering one; failing ids only when the chosen run
    failed, and the runs before the first edit only then. ``calls``: the events' ``calls.classify``."""
    calls = calls if calls is not None else classify(events, limits)
    span = evidence.span
    chosen: Run | None = None
    last: Run | None = None
    for index in range(len(events) - 1, (span[1] if span else 0) - 1, -1):  # same call: edit, then run
        run = _run_at(calls, index, evidence)
        if run is None:
            continue
        last = last or run
        if covers(run, evidence.files):
            chosen = run
            break
    chosen = chosen or last
    if chosen is None or chosen.ok or span is None:
        return chosen
    chosen = replace(chosen, failing=failing_tests(calls[chosen.index].window()))
    if not chosen.failing:
        return chosen
    before: set[str] = set()
    for index in range(min(span[0], len(events))):
        run = _run_at(calls, index, evidence)
        if run is not None and not run.ok:
            before |= failing_tests(calls[index].window())
    if chosen.failing <= before and not _related(chosen.failing, evidence) and _passed_some(chosen):
        note = f"; {len(chosen.failing)} failing before the first edit too"
        return replace(chosen, ok=True, summary=chosen.summary + note)
    return chosen


def decide_outcome(run: Run | None, meta: HarnessMeta) -> tuple[TestRun | None, Outcome]:
    """The entry's ``tests`` and ``outcome`` from the last run and the harness's own verdict."""
    tests: TestRun | None = None
    if meta.tests is not None:
        tests = TestRun(command=meta.tests.command, ok=meta.tests.ok, summary=meta.tests.summary)
    elif run is not None:
        tests = TestRun(command=run.command, ok=run.ok, summary=run.summary)
    if meta.gate_downgraded or meta.stop_reason == "complete_unverified" or tests is None:
        return tests, "unverified"
    return tests, "fixed" if tests.ok else "partial"
