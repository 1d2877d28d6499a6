"""Turn events for pipeline tests: small, valid, and each extracting to a known outcome."""

from __future__ import annotations

from typing import Any, Literal

import orjson

Kind = Literal["fixed", "partial", "unverified", "no_files"]

_FAILING = """============================= test session starts ==============================
collected 3 items

tests/test_{mod}.py .F.                                                    [100%]

=================================== FAILURES ===================================
___________________________________ test_{mod} ___________________________________
    def test_{mod}():
>       assert parse_{mod}("a,b") == ["a", "b"]
E       AssertionError: assert ['a,b'] == ['a', 'b']

tests/test_{mod}.py:7: AssertionError
=========================== short test summary info ============================
FAILED tests/test_{mod}.py::test_{mod} - AssertionError: assert ['a,b'] == ['a', 'b']
========================= 1 failed, 2 passed in 0.05s ==========================
"""
_PASSING = (
    "collected 3 items\n\ntests/test_{mod}.py ...   [100%]\n\n============ 3 passed in 0.04s ============\n"
)


def turn(
    i: int = 0,
    *,
    owner: str = "alice",
    project: str = "github.com/acme/widgets",
    kind: Kind = "fixed",
    ts: float = 1_700_000_000.0,
    event_id: str | None = None,
) -> dict[str, Any]:
    """A v1 turn event whose extraction gives ``kind`` (``no_files``: skipped_no_files)."""
    mod = f"mod{i}"
    tools: list[dict[str, Any]] = []
    if kind in ("fixed", "partial"):
        tools.append(
            {"tool": "bash", "input": {"command": f"pytest -q tests/test_{mod}.py"},
             "output": _FAILING.format(mod=mod), "exit_code": 1}
        )  # fmt: skip
    if kind != "no_files":
        tools.append(
            {"tool": "str_replace_based_edit_tool",
             "input": {"command": "str_replace", "path": f"src/{mod}.py",
                       "old_str": "return [text]", "new_str": "return text.split(',')"},
             "output": f"The file src/{mod}.py has been edited."}
        )  # fmt: skip
    if kind == "fixed":
        tools.append(
            {"tool": "bash", "input": {"command": f"pytest -q tests/test_{mod}.py"},
             "output": _PASSING.format(mod=mod), "exit_code": 0}
        )  # fmt: skip
    if kind == "partial":
        tools.append(
            {"tool": "bash", "input": {"command": f"pytest -q tests/test_{mod}.py"},
             "output": _FAILING.format(mod=mod), "exit_code": 1}
        )  # fmt: skip
    if kind == "no_files":
        tools.append({"tool": "bash", "input": {"command": "ls"}, "output": "src tests", "exit_code": 0})
    event: dict[str, Any] = {
        "v": 1,
        "ts": ts + i,
        "owner": owner,
        "project_key": project,
        "workspace": "/work/widgets",
        "user_message": f"parse_{mod} should split on commas; test_{mod} fails",
        "tool_events": tools,
        "harness_meta": {"harness": "test", "turn": i},
    }
    if event_id is not None:
        event["event_id"] = event_id
    return event


def wire(event: dict[str, Any]) -> bytes:
    """The event's JSON bytes."""
    return orjson.dumps(event)


def verdict(
    of: dict[str, Any] | None = None,
    *,
    outcome: str = "fixed",
    source: str = "ci",
    ts: float = 1_700_000_500.0,
    owner: str = "alice",
    project: str = "github.com/acme/widgets",
    detail: str = "",
    event_id: str | None = None,
    entry_id: str | None = None,
) -> dict[str, Any]:
    """A v1 verdict event on the turn event ``of`` (by its event id), or on ``event_id`` / ``entry_id``."""
    from ingest.schema import validate_event  # noqa: PLC0415

    body: dict[str, Any] = {
        "v": 1, "kind": "verdict", "ts": ts, "owner": owner, "project_key": project,
        "outcome": outcome, "source": source, "detail": detail,
    }  # fmt: skip
    if entry_id is not None:
        body["entry_id"] = entry_id
    else:
        body["event_id"] = event_id or validate_event(of or turn()).event_id
    return body
