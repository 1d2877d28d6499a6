"""Entry factories shared by the store tests."""

from __future__ import annotations

from typing import Any

from store.entry import FixEntry, Outcome, TestRun, entry_id

OWNER = "alice"
PROJECT = "/home/alice/app"


def make_entry(
    n: int | str,
    task: str = "fix something",
    *,
    files: list[str] | None = None,
    errors: list[str] | None = None,
    outcome: Outcome = "fixed",
    ts: float | None = None,
    solution: str = "",
    owner: str = OWNER,
    project: str = PROJECT,
    **extra: Any,
) -> FixEntry:
    """An entry of ``project`` whose id derives from ``n`` (same ``n``, same id)."""
    event = f"ev-{n}"
    tests = None if outcome == "unverified" else TestRun(command="pytest -q", ok=outcome == "fixed")
    return FixEntry(
        id=entry_id(owner, project, event),
        ts=float(ts if ts is not None else 1_700_000_000 + (n if isinstance(n, int) else 0)),
        project=project,
        task=task,
        files=files if files is not None else ["src/app.py"],
        symbols=[],
        errors=errors or [],
        tests=tests,
        outcome=outcome,
        solution=solution,
        tags=[outcome],
        event_id=event,
        **extra,
    )
