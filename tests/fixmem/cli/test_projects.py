"""``fixmem projects`` and unknown projects: a mistyped project is named as unknown (exit 66) with the
owner's projects nearest first, not answered like a project where nothing is relevant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixmem.cli import main
from fixmem.errors import ExitCode
from store.catalog import nearest_first
from tests.configs import fix_store
from tests.store.factories import OWNER, make_entry

WIDGETS = "github.com/acme/widgets"
GADGETS = "github.com/acme/gadgets"


@pytest.fixture
def two_projects(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Path:
    """alice: three fixes in WIDGETS (2 fixed, 1 unverified), one partial in GADGETS."""
    store = fix_store(data_dir)
    store.append(
        OWNER,
        WIDGETS,
        [
            make_entry(1, project=WIDGETS, ts=1_767_225_600),
            make_entry(2, project=WIDGETS, ts=1_767_225_700),
            make_entry(3, project=WIDGETS, outcome="unverified", ts=1_767_312_000),
        ],
    )
    store.append(OWNER, GADGETS, [make_entry(4, project=GADGETS, outcome="partial", ts=1_767_225_600)])
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_OWNER", OWNER)
    monkeypatch.delenv("FIXMEM_REDIS_URL", raising=False)
    return data_dir


def test_nearest_first_puts_the_likely_typo_target_first() -> None:
    assert nearest_first("github.com/acme/widget", [GADGETS, "/home/x", WIDGETS]) == [
        WIDGETS,
        GADGETS,
        "/home/x",
    ]
    assert nearest_first("x", []) == []


def test_recall_and_stats_of_a_mistyped_project_say_unknown_with_exit_66(
    two_projects: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed on the old code: both printed "(no relevant past fix)" / zeros and exited 0."""
    for argv in (
        ["recall", "parse rows", "--project", "github.com/acme/widget"],
        ["stats", "--project", "github.com/acme/widget"],
    ):
        assert main(argv) == ExitCode.NOT_FOUND
        err = capsys.readouterr().err
        assert "unknown project 'github.com/acme/widget'" in err
        assert f"known, nearest first: {WIDGETS}, {GADGETS}" in err
        assert str(two_projects) in err  # where it looked
    # a known project where nothing is relevant is still rc 0 and says so
    assert main(["recall", "zzzz qqqq", "--project", WIDGETS]) == 0
    assert "(no relevant past fix)" in capsys.readouterr().err


def test_an_owner_with_no_project_is_told_where_it_was_looked_for(
    two_projects: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--project", WIDGETS, "--owner", "bob"]) == ExitCode.NOT_FOUND
    err = capsys.readouterr().err
    assert "owner 'bob' has no project in" in err and "FIXMEM_OWNER" in err
    assert GADGETS not in err  # another owner's projects are never named


def test_projects_lists_counts_ratios_and_last_activity(
    two_projects: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed on the old code: there was no `projects` command (exit 2)."""
    assert main(["projects"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["project", "fixes", "fixed", "partial", "unverified", "last", "activity"]
    assert lines[1].split() == [GADGETS, "1", "0%", "100%", "0%", "2026-01-01", "00:00", "UTC"]
    assert lines[2].split() == [WIDGETS, "3", "67%", "0%", "33%", "2026-01-02", "00:00", "UTC"]
    assert main(["projects", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["owner"] == OWNER
    assert [(p["project"], p["total"], p["newest_ts"]) for p in listed["projects"]] == [
        (GADGETS, 1, 1_767_225_600),
        (WIDGETS, 3, 1_767_312_000),
    ]
    assert listed["projects"][1]["by_outcome"] == {"fixed": 2, "partial": 0, "unverified": 1}
    assert main(["projects", "--owner", "bob"]) == 0
    assert "(owner 'bob' has no project in" in capsys.readouterr().err
