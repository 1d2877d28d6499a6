"""``fixmem doctor``: reports logs whose lines are out of time order; ``--fix`` rewrites them in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixmem.cli import main
from fixmem.errors import ExitCode
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry

TASK = "fix the login timeout in the session refresh"


def test_doctor_reports_then_fixes_a_late_replay(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = make_entry(1, TASK, files=["src/auth.py"], ts=1_783_296_000)
    newer = make_entry(2, TASK, files=["src/auth.py"], ts=1_789_344_000)
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [newer])
    store.append(OWNER, PROJECT, [older])  # stored: the older names the newer as superseded
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_OWNER", OWNER)

    assert main(["doctor"]) == ExitCode.FAILURE
    assert (
        f"needs   {PROJECT}: 2 lines out of time order, 2 supersedes links to rewrite"
        in capsys.readouterr().out
    )
    assert main(["doctor", "--fix"]) == ExitCode.OK
    assert f"fixed   {PROJECT}:" in capsys.readouterr().out
    assert main(["doctor", "--project", PROJECT]) == ExitCode.OK
    assert capsys.readouterr().out.startswith(f"ok      {PROJECT}\n\nlocalize   ")  # then the index
    assert [e.id for e in fix_store(data_dir).read(OWNER, PROJECT).entries] == [older.id, newer.id]
    assert [e.supersedes for e in fix_store(data_dir).read(OWNER, PROJECT).entries] == [None, older.id]
