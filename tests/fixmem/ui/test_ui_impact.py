"""The Impact page over real HTTP: both arms, the lift with its interval, the fixes shown; bad input is a
clear 4xx; another owner's project is not shown."""

from __future__ import annotations

from typing import Any

from store import FixEntry
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
