"""The turn's deciding test run and its outcome.

Pure. The **last** test run of the turn decides. A test run is a shell call whose command line contains a
test-runner command (``testruns.runner_of``) and that actually ran: exit 126/127, "command not found",
"No module named …" and runs that collected no tests do not count. ``ok`` comes from the exit code when
it belongs to the runner (the runner is the line's last command, not piped into ``tail``), else from the
summary text, else from the harness's ``ok`` flag. ``harness_meta.tests`` overrides all of this.

Outcome: ``fixed`` (last run passed), ``partial`` (last run failed), ``unverified`` (no test run, or the
harness downgraded the turn: ``gate_downgraded`` or ``stop_reason == "complete_unverified"``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.schema import HarnessMeta, ToolEvent
from store.entry import Outcome, TestRun
from workers.extraction.limits import Limits, WordSet, clip, scan_window
from workers.extraction.shell import parse_commands
from workers.extraction.testruns import RunSummary, parse_summary, runner_of
from workers.extraction.tools import Family, family_of, shell_command_of

_DID_NOT_RUN = re.compile(
    r"command not found|No module named '?(?:pytest|unittest|nose|tox|nox)|: not found$|"
    r"No such file or directory$|Unknown command|Missing script: \"?test|ERROR: file or directory not found|"
    r"error: no such command|is not recognized as",
    re.MULTILINE,
)


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
    """One test run found in the turn."""

    runner: str
    command: str
    ok: bool
    summary: str


def _exit_code_belongs(command: str) -> tuple[str | None, bool]:
    """The runner in ``command`` and whether the line's exit status is the runner's."""
    commands = parse_commands(command)
    runner: str | None = None
    owns = False
    for position, cmd in enumerate(commands):
        name = runner_of(cmd)
        if name is None:
            continue
        runner = name
        after = commands[position + 1 :]
        harmless = all(c.argv[:1] in (["echo"], ["printf"], ["true"]) for c in after)
        owns = not cmd.piped and (not after or (cmd.separator == "&&" and harmless))
    return runner, owns


def run_of(event: ToolEvent, limits: Limits) -> Run | None:
    """The test run one tool call is, or ``None``."""
    if family_of(event.tool, event.input) not in {Family.SHELL, Family.OTHER}:
        return None
    command = clip(shell_command_of(event.input), limits.max_input_chars)
    if not command or not _RUNNER_WORDS.found_in(command):
        return None
    runner, owns_exit = _exit_code_belongs(command)
    if runner is None or event.exit_code in {126, 127}:
        return None
    output = scan_window(event.output, limits)
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
    return Run(runner=runner, command=command, ok=ok, summary=text)


def last_run(events: Sequence[ToolEvent], limits: Limits) -> Run | None:
    """The last test run of the turn."""
    for event in reversed(events):
        run = run_of(event, limits)
        if run is not None:
            return run
    return None


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
