"""The recall_fixes tool localizes a task-start question in the agent's checkout (issue 32): a call that
names no file is localized with the index this process keeps warm (built by a real child process), and
recall weighs the files it points to; cold, failing or given files, it answers on the text alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixmem.mcp.tool import ToolContext, recall_fixes
from fixmem.settings import Settings
from store import FixEntry, FixStore, TestRun, entry_id
from tests.configs import fix_store
from tests.fixmem.runtime.localize.checkout_repo import make_checkout
from tests.polling import wait_for

OWNER = "alice"
PROJECT = "github.com/acme/widgets"
NOW = 1_700_100_000.0
TASK = "apply_discount raises ValueError: quantity must be positive"
TOTALS = "invoicer/totals.py"


def _entry(n: int, task: str, files: list[str]) -> FixEntry:
    return FixEntry(
        id=entry_id(OWNER, PROJECT, f"ev-{n}"), ts=1_700_000_000.0 + n, project=PROJECT, task=task,
        files=files, symbols=[], errors=[], tests=TestRun(command="pytest -q", ok=True), outcome="fixed",
        solution=f"solution {n}", tags=["fixed"],
    )  # fmt: skip


@pytest.fixture
def store(data_dir: Path) -> FixStore:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [
        _entry(1, "Bulk orders get the wrong invoice total", [TOTALS]),
        _entry(2, "Login form times out on slow networks", ["web/login.ts"]),
        _entry(3, "Server fails to start when the port is bound", ["server/main.go"]),
    ])  # fmt: skip
    return store


def _context(store: FixStore, tmp_path: Path, repo: Path, **env: str) -> ToolContext:
    settings = Settings.from_env({"FIXMEM_DATA_DIR": str(tmp_path / "data"), **env})
    ctx = ToolContext.from_settings(settings, store, owner=OWNER, project_key=PROJECT, workspace=str(repo))
    return ToolContext(**{**ctx.__dict__, "clock": lambda: NOW})


def _localized_reasons(result: Any) -> dict[str, str | None]:
    return {f["entry"]["files"][0]: f["reasons"]["localized"] for f in result.fixes}


def test_a_task_start_call_is_localized_once_the_index_is_warm(store: FixStore, tmp_path: Path) -> None:
    repo = make_checkout(tmp_path / "widgets")
    ctx = _context(store, tmp_path, repo)
    assert ctx.localizer is not None
    cold = recall_fixes(ctx, {"query": TASK})  # cold: the text alone, the build started in a child
    assert all(why is None for why in _localized_reasons(cold).values())
    wait_for(lambda: ctx.localizer(str(repo), TASK) is not None, 60.0, "the checkout's index built")  # type: ignore[misc]
    warm = _localized_reasons(recall_fixes(ctx, {"query": TASK}))
    assert TOTALS in warm and "apply_discount" in (warm[TOTALS] or "")
    assert set(warm) == {TOTALS}  # the others touched no file the task points to
    given = recall_fixes(ctx, {"query": TASK, "files": ["web/login.ts"]})  # files named: not localized
    assert all(why is None for why in _localized_reasons(given).values())


def test_localization_off_or_failing_leaves_the_text_alone(store: FixStore, tmp_path: Path) -> None:
    repo = make_checkout(tmp_path / "widgets")
    assert _context(store, tmp_path, repo, FIXMEM_LOCALIZE="false").localizer is None
    text_only = recall_fixes(_context(store, tmp_path, repo, FIXMEM_LOCALIZE="false"), {"query": TASK})

    def broken(cwd: str, text: str) -> None:
        raise RuntimeError("index unreadable")

    ctx = ToolContext(store=store, owner=OWNER, project_key=PROJECT, workspace=str(repo), clock=lambda: NOW,
                      localizer=broken)  # fmt: skip
    assert recall_fixes(ctx, {"query": TASK}).fixes == text_only.fixes
