"""The Impact page over real HTTP: both arms, the lift with its interval, the fixes shown; bad input is a
clear 4xx; another owner's project is not shown."""

from __future__ import annotations

from typing import Any

from store import FixEntry
from store.sessions import SessionRecord
from tests.fixmem.ui.conftest import ALICE, BOB, Ui

IMPACT = "github.com/acme/impact"
SHOWN = "fix-00000000000000aa"


def session_entry(n: int, arm: str, outcome: str) -> FixEntry:
    listed: dict[str, Any] = {"injected": [], "shadow": []}
    listed["injected" if arm == "memory" else "shadow"] = [
        {"id": SHOWN, "surface": "claude-code", "tier": "close"}
    ]
    return FixEntry(
        id=f"fix-{n:016x}", ts=1_767_225_600.0 + n, project=IMPACT, task=f"task {n}", files=["a.py"],
        symbols=[], errors=[], tests=None, outcome=outcome, solution="", tags=[], session_id=f"s{n}",
        recall={"arm": arm, **listed, "followed": [SHOWN] if n % 2 else []},
    )  # fmt: skip


def test_the_impact_page_reports_both_arms_and_the_lift(ui: Ui) -> None:
    entries = [session_entry(n, "memory", "fixed" if n % 4 else "partial") for n in range(1, 13)]
    entries += [session_entry(n, "holdback", "fixed" if n % 3 == 0 else "partial") for n in range(13, 19)]
    ui.api.ctx.store.append("alice", IMPACT, entries)
    client = ui.client(ALICE)
    page = client.get("/ui/impact", params={"project": IMPACT, "since": "all"})
    assert page.status_code == 200, page.text
    text = page.text
    assert "<td>memory</td><td>12</td><td>75.0%</td>" in text  # 9 of 12 end fixed
    assert "<td>holdback</td><td>6</td><td>33.3%</td>" in text  # 2 of 6
    assert "+41.7 points" in text and "95% interval" in text
    assert SHOWN in text and 'aria-current="page">Impact<' in text
    assert client.get("/ui/impact", params={"since": "forever"}).status_code == 400
    assert ui.client(BOB).get("/ui/impact", params={"project": IMPACT}).status_code == 404


def test_sessions_that_made_no_entry_count_in_their_arm_and_list_their_project(ui: Ui) -> None:
    ui.api.ctx.store.append("alice", IMPACT, [session_entry(1, "memory", "fixed")])
    quiet = "github.com/acme/quiet"  # every session of it ended without editing a file
    held = [SessionRecord(quiet, f"q{n}", "holdback", 1_767_225_600.0 + n, shadow=(SHOWN,)) for n in range(2)]
    ui.api.ctx.store.record_sessions("alice", quiet, held)
    client = ui.client(ALICE)
    text = client.get("/ui/impact", params={"since": "all"}).text
    assert "<td>holdback</td><td>2</td><td>0.0%</td>" in text and "<td>2 (100.0%)</td>" in text
    assert f'<option value="{quiet}"' in text
    assert client.get("/ui/impact", params={"project": quiet, "since": "all"}).status_code == 200
