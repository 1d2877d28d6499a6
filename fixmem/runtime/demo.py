"""``fixmem up --demo``: publish a few realistic turns, wait for their entries, show them and a recall.

The turns: a failing pytest run, an edit, a passing run (``fixed``); an edit with no test run
(``unverified``); an edit after which the tests still fail (``partial``). Their event ids are fixed, so
running the demo again records nothing twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import redis

from fixmem import service
from fixmem.limits import DEFAULT_PROMPT_BUDGET_TOKENS
from ingest.publish import publish_many
from ingest.schema import validate_event
from store import FixEntry, FixStore, entry_id

OWNER = "demo"
PROJECT = "github.com/fixmem/demo-widgets"
WORKSPACE = "/home/demo/widgets"
QUERY = "parse_row breaks on quoted commas in the CSV importer"

_FAIL = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0
rootdir: /home/demo/widgets
collected 14 items

tests/test_csv_import.py ....F.........                                  [100%]

=================================== FAILURES ===================================
_________________________ test_parse_row_quoted_comma __________________________

    def test_parse_row_quoted_comma():
>       assert parse_row('a,"b,c",d') == ["a", "b,c", "d"]
E       AssertionError: assert ['a', '"b', 'c"', 'd'] == ['a', 'b,c', 'd']
E         At index 1 diff: '"b' != 'b,c'

tests/test_csv_import.py:41: AssertionError
=========================== short test summary info ============================
FAILED tests/test_csv_import.py::test_parse_row_quoted_comma - AssertionError: assert ['a', '"b', 'c"', 'd'] == ['a', 'b,c', 'd']
========================= 1 failed, 13 passed in 0.21s =========================
"""  # noqa: E501
_PASSING = """============================= test session starts ==============================
collected 14 items

tests/test_csv_import.py ..............                                  [100%]

============================== 14 passed in 0.19s ==============================
"""
_TYPE_FAIL = """============================= test session starts ==============================
collected 6 items

tests/test_money.py ..F...                                               [100%]

=================================== FAILURES ===================================
____________________________ test_total_rounds_half_up ____________________________

    def test_total_rounds_half_up():
>       assert total([Decimal("0.005")]) == Decimal("0.01")
E       TypeError: unsupported operand type(s) for +: 'float' and 'decimal.Decimal'

src/widgets/money.py:18: TypeError
=========================== short test summary info ============================
FAILED tests/test_money.py::test_total_rounds_half_up - TypeError: unsupported operand type(s) for +: 'float' and 'decimal.Decimal'
========================= 1 failed, 5 passed in 0.08s ==========================
"""  # noqa: E501


def _bash(command: str, output: str, code: int) -> dict[str, Any]:
    return {"tool": "bash", "input": {"command": command}, "output": output, "exit_code": code}


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {
        "tool": "str_replace_based_edit_tool",
        "input": {"command": "str_replace", "path": f"{WORKSPACE}/{path}", "old_str": old, "new_str": new},
        "output": f"The file {WORKSPACE}/{path} has been edited.",
    }


def demo_turns(now: float) -> list[dict[str, Any]]:
    """Three realistic v1 turn events (fixed, unverified, partial) stamped just before ``now``."""
    base = {"v": 1, "owner": OWNER, "project_key": PROJECT, "workspace": WORKSPACE}
    meta = {"harness": "fixmem-demo", "model": "demo-model", "session_id": "demo-session"}
    return [
        {
            **base,
            "event_id": "demo-fixed-quoted-comma",
            "ts": now - 120,
            "user_message": "The CSV importer splits quoted fields: parse_row('a,\"b,c\",d') must keep b,c.",
            "tool_events": [
                _bash("pytest -q tests/test_csv_import.py", _FAIL, 1),
                _edit(
                    "src/widgets/csv_import.py",
                    "return line.split(',')",
                    "return next(csv.reader([line], skipinitialspace=True))",
                ),
                _bash("pytest -q tests/test_csv_import.py", _PASSING, 0),
            ],
            "harness_meta": {**meta, "turn": 1, "commit": "3f9c2ab"},
            "round_texts": ["Use the csv module's reader so quoted commas stay inside their field."],
        },
        {
            **base,
            "event_id": "demo-unverified-readme",
            "ts": now - 60,
            "user_message": "Document the importer's quoting rules in the README.",
            "tool_events": [
                _edit(
                    "README.md", "## Importing", "## Importing\n\nFields may be quoted with double quotes."
                ),
            ],
            "harness_meta": {**meta, "turn": 2},
        },
        {
            **base,
            "event_id": "demo-partial-decimal-total",
            "ts": now - 30,
            "user_message": "total() must round half up with Decimal, not float.",
            "tool_events": [
                _edit(
                    "src/widgets/money.py", "return round(sum(xs), 2)", "return sum(xs, 0.0).quantize(CENT)"
                ),
                _bash("pytest -q tests/test_money.py", _TYPE_FAIL, 1),
            ],
            "harness_meta": {**meta, "turn": 3},
        },
    ]


@dataclass(frozen=True)
class DemoResult:
    """The entries the demo waited for (in publish order) and the prompt block of the related query."""

    entries: list[FixEntry]
    prompt: str


def expected_ids(turns: list[dict[str, Any]]) -> list[str]:
    """The entry ids the turns will get."""
    return [entry_id(t["owner"], t["project_key"], validate_event(t).event_id) for t in turns]


def run_demo(
    client: redis.Redis,
    store: FixStore,
    *,
    stream: str,
    out: TextIO,
    timeout: float = 60.0,
    budget_tokens: int = DEFAULT_PROMPT_BUDGET_TOKENS,
    clock: Callable[[], float] = time.time,
) -> DemoResult:
    """Publish the demo turns, wait for their entries, print them and the recall prompt block.

    Raises TimeoutError when the entries do not all appear within ``timeout`` seconds.
    """
    turns = demo_turns(clock())
    ids = expected_ids(turns)
    stream_ids = publish_many(client, turns, stream=stream)
    out.write(f"demo: published {len(turns)} turns to {stream} ({', '.join(stream_ids)})\n")
    deadline = time.monotonic() + timeout
    while True:
        found = {e.id: e for e in store.read(OWNER, PROJECT).entries}
        if all(i in found for i in ids):
            break
        if time.monotonic() > deadline:
            missing = [i for i in ids if i not in found]
            raise TimeoutError(f"entries {missing} did not appear within {timeout:g}s: see `fixmem status`")
        time.sleep(0.1)
    entries = [found[i] for i in ids]
    out.write(f"\ndemo: {len(entries)} entries in the fix log of {OWNER}/{PROJECT}:\n")
    for entry in entries:
        tests = f"{entry.tests.command} -> {entry.tests.summary}" if entry.tests else "no tests run"
        out.write(f"  {entry.id}  {entry.outcome:<10}  files={entry.files}\n")
        out.write(f"      errors={entry.errors}\n      tests: {tests}\n")
    # no workspace: the demo's is not on disk
    answer = service.recall(
        store, OWNER, PROJECT, service.Question(QUERY), budget_tokens=budget_tokens, now=clock()
    )
    block = answer.block
    out.write(f"\ndemo: recall for {QUERY!r}:\n\n{block or '(nothing relevant: recall abstains)'}\n\n")
    return DemoResult(entries, block)
