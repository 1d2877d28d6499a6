"""Eval entries made by the REAL extractor from real runner output and real agent logs.

Usage, from the repository root: ``python -m evals.recall.derive_entries`` prints the ``[[entry]]``
blocks (TOML) to paste into ``evals/recall/projects/*.toml``; ``tests/evals/recall/test_derived.py``
checks that the dataset still holds exactly what the extractor makes of these turns.

Two sources:

- ``RUN_TURNS``: an agent turn built around two real runs of a real runner (``evals/recall/runs``, made
  by ``make_runs.py``): the user's request, the failing run, the agent's edit (the smallest hunk that
  turns the first version of the file into the second, as an ``Edit`` tool call), the second run (passing,
  or failing again for a ``partial`` entry), and the agent's closing sentence. Only the request, the
  closing sentence, the label and the age are written by hand.
- ``LOG_TURNS``: a turn of a real agent log (``tests/fixtures/agent-logs``, copied unchanged from public
  repositories; sources and licences in ``evals/README.md``) read by the backfill importer.

Either way ``workers.extraction.extract`` makes the entry: files, symbols, error signatures, the test
run, the outcome, the solution line and the tags are exactly what the pipeline would store.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.recall.runs import make_runs
from ingest.importers import import_file
from ingest.schema import TurnEvent
from store.entry import FixEntry
from workers.extraction import extract

ROOT = Path(__file__).resolve().parents[2]  # the repository: the agent logs are its test fixtures
RUNS = Path(__file__).resolve().parent / "runs"
AGENT_LOGS = ROOT / "tests" / "fixtures" / "agent-logs"
FIELDS = ("task", "files", "symbols", "errors", "tests", "outcome", "solution", "tags")


@dataclass(frozen=True)
class RunTurn:
    """A turn around one ``make_runs`` case: who asked what, and what the agent said at the end."""

    owner: str
    project: str
    request: str  # the user's message (becomes the task)
    closing: str  # the agent's last text (its first sentence joins the solution)
    days_ago: float
    note: str = ""


@dataclass(frozen=True)
class LogTurn:
    """One turn of a real agent log, read by the importer."""

    owner: str
    project: str
    path: str  # under tests/fixtures/agent-logs
    turn: int  # index among the events the importer yields
    days_ago: float
    source: str
    note: str = ""


PAY = ("alice", "github.com/alice/payments-api")
INGESTD = ("bob", "github.com/bob/ingestd")
TINYDB = ("bob", "github.com/bob/tinydb")
LIBS = ("fleet", "swe-sandbox/python-libs")

RUN_TURNS: dict[str, RunTurn] = {
    "pay-fx-thousands": RunTurn(
        *PAY, "Converting EUR amounts to USD blows up when the amount string has a thousands separator "
        "like 1,200.50", "Strip the thousands separators before parsing the amount.", 9,
        "pytest cut its summary line ('- decim...'); the E line keeps decimal.InvalidOperation",
    ),
    "pay-stripe-retry": RunTurn(
        *PAY, "Our Stripe calls fail on the first 429 instead of backing off and retrying",
        "The retry loop only ever made one attempt; it now tries up to the configured number of times.",
        6, "neighbour of pay-payout-429 (the payout task's 429s): another retry bug, another file",
    ),
    "pay-refund-amount-string": RunTurn(
        *PAY, "POST /refunds rejects amounts sent as JSON strings like \"12.50\"",
        "RefundRequest was strict; amounts given as strings are now coerced to Decimal.", 4,
        "same error type (pydantic ValidationError) as pay-settings-missing-key, another model",
    ),
    "pay-webhook-dashboard-events": RunTurn(
        *PAY, "The webhook replay guard crashes on events created from the Stripe dashboard (their "
        "request is null)", "Events without a request now fall back to an empty dict.", 2,
        "partial: the second run fails again with another error (KeyError after TypeError)",
    ),
    "go-ring-wrap-panic": RunTurn(
        *INGESTD, "The in-memory ring buffer panics once it fills up", "Push now wraps the write "
        "index around the buffer.", 8, "panic type shared with go-nil-map-labels and go-consumer-nil-pointer",
    ),
    "go-dedup-window-expiry": RunTurn(
        *INGESTD, "Duplicate detection never forgets a key, so replays after an hour are still dropped",
        "Seen compares the key's age with the window's ttl.", 5,
    ),
    "go-producer-unused-import": RunTurn(
        *INGESTD, "The kafka package no longer builds after the flush timer was removed",
        "Removed the unused time import.", 3,
    ),
    "rs-wal-torn-tail": RunTurn(
        *TINYDB, "Replaying the WAL after a crash panics on a half-written last record",
        "Replay stops at a torn tail instead of unwrapping the short read.", 7,
        "neighbours: rs-empty-file-unwrap (another unwrap panic), rs-wal-fsync (same file)",
    ),
    "rs-flush-moved-page": RunTurn(
        *TINYDB, "pager flush does not compile after the dirty list became owned",
        "Count the page's bytes before moving it into the page list.", 6,
        "neighbours: rs-pager-borrow (E0502) and rs-page-id-u64 (E0308) in the same file",
    ),
}  # fmt: skip

LOG_TURNS: dict[str, LogTurn] = {
    "lib-aider-run-cmd-add-test": LogTurn(
        *LIBS, "aider/add-test.md", 1, 12.5,
        "aider add-test.md, its second turn (/run pytest): Aider-AI/aider aider/website/examples/add-test.md",
        "the turn after lib-aider-cmd-add-test in the same session: the new test fails",
    ),
}  # fmt: skip


def _edit(old: str, new: str, path: str) -> dict[str, Any]:
    """An ``Edit`` tool call replacing the smallest run of whole lines that differs (one line of context)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    start, end = max(start - 1, 0), max(end - 1, 0)
    return {
        "tool": "Edit",
        "input": {
            "file_path": path,
            "old_string": "".join(a[start : len(a) - end]),
            "new_string": "".join(b[start : len(b) - end]),
        },
    }


def run_turn_event(label: str) -> TurnEvent:
    """The turn of ``RUN_TURNS[label]`` around the real runs of ``make_runs.CASES[label]``."""
    turn, case = RUN_TURNS[label], make_runs.CASES[label]
    manifest = json.loads((RUNS / "manifest.json").read_text())[label]
    runs = [
        {
            "tool": "Bash",
            "input": {"command": row["command"]},
            "output": (RUNS / f"{label}-{step}.txt").read_text(),
            "exit_code": row["exit_code"],
        }
        for step, row in enumerate(manifest, start=1)
    ]
    edits = [
        _edit(case.first[name], case.second[name], f"{case.root}/{name}")
        for name in case.first
        if case.first[name] != case.second[name]
    ]
    return TurnEvent.model_validate(
        {
            "v": 1,
            "ts": 1.0,
            "event_id": f"eval-run:{label}",
            "owner": turn.owner,
            "project_key": turn.project,
            "workspace": case.root,
            "user_message": turn.request,
            "tool_events": [runs[0], *edits, runs[1]],
            "round_texts": [turn.closing],
        }
    )


LOG_WORKSPACE = "/home/fleet/logs"  # stands in for the log's directory, which the importer takes


def log_turn_event(label: str) -> TurnEvent:
    """The turn of ``LOG_TURNS[label]``, as the backfill importer reads it, with its workspace (the log's
    directory) replaced by ``LOG_WORKSPACE``, so the derived entry does not depend on where the checkout
    lives (a checkout under ``/tmp`` once made no entry: the extractor took the whole project for scratch,
    fixed in bb628ef)."""
    turn = LOG_TURNS[label]
    imported = import_file(AGENT_LOGS / turn.path, owner=turn.owner, project=turn.project)
    event = imported.events[turn.turn]
    return event.model_copy(update={"workspace": LOG_WORKSPACE})


def derived(label: str) -> FixEntry:
    """The entry the extractor makes of the turn named ``label``. Raises KeyError for an unknown label."""
    event = run_turn_event(label) if label in RUN_TURNS else log_turn_event(label)
    result = extract(event)
    if result.entry is None:
        raise ValueError(f"{label}: the extractor made no entry ({result.skip})")
    return result.entry


def entry_fields(entry: FixEntry) -> dict[str, Any]:
    """The dataset fields an entry's ``[[entry]]`` block holds (``FIELDS``), as TOML-ready values."""
    dumped = entry.model_dump(mode="json")
    return {name: dumped[name] for name in FIELDS}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return repr(value)


def toml_block(label: str) -> str:
    """The ``[[entry]]`` block of ``label`` for its project's TOML file."""
    meta = RUN_TURNS.get(label) or LOG_TURNS[label]
    source = (
        f"evals/recall/derive_entries.py: real runs evals/recall/runs/{label}-*.txt"
        if isinstance(meta, RunTurn)
        else f"evals/recall/derive_entries.py: {meta.source}"
    )
    lines = ["[[entry]]", f"label = {_toml(label)}", f"days_ago = {meta.days_ago:g}"]
    for name, value in entry_fields(derived(label)).items():
        if value is not None:
            lines.append(f"{name} = {_toml(value)}")
    lines.append(f"source = {_toml(source)}")
    if meta.note:
        lines.append(f"note = {_toml(meta.note)}")
    return "\n".join(lines)


def labels() -> list[str]:
    """Every derived label, run turns first."""
    return [*RUN_TURNS, *LOG_TURNS]


def main(argv: list[str]) -> None:
    """Print the blocks of the labels named (all by default), grouped by project."""
    for label in argv or labels():
        meta = RUN_TURNS.get(label) or LOG_TURNS[label]
        print(f"# {meta.owner} {meta.project}\n{toml_block(label)}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
