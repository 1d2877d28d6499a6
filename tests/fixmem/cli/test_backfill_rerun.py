"""Backfill ids do not depend on the path given, and re-running over an earlier version's data adds nothing.

The earlier data directory (``tests/fixtures/legacy-data/b6585f5``) was written by commit b6585f5's code;
the re-run here uses today's importers, extraction and store the way a worker does (extract, then one
``FixStore.append`` per project), from another path argument than the one that data was made with.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from ingest.backfill.run import run_backfill
from ingest.importers import import_file, iter_files
from store import FixEntry
from tests.configs import fix_store
from tests.ingest.backfill.support import config
from workers.extraction import extract

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LEGACY = FIXTURES / "legacy-data" / "b6585f5"
_spec = importlib.util.spec_from_file_location("legacy_make", FIXTURES / "legacy-data" / "make.py")
assert _spec is not None and _spec.loader is not None
_make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_make)
copy_logs = _make.copy_logs  # the generator's copy, so the files are the same (mtimes too)


def _ids(paths: Sequence[Path], *, owner: str = "t") -> dict[str, list[str]]:
    """File -> event ids a dry-run backfill of ``paths`` would publish."""
    result = run_backfill(None, paths, config(owner))
    return {Path(r.path).name: [s.event_id for s in r.sent] for r in result.records if r.sent}


def test_event_ids_do_not_depend_on_the_path_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = copy_logs(tmp_path / "agent-logs")
    whole = _ids([logs])
    assert {"add-test.md", "no-color.md", "basic.json", "basic_gui_mode.json"} <= set(whole)
    monkeypatch.chdir(logs)  # `cd agent-logs && fixmem backfill .` after `fixmem backfill agent-logs/aider`
    for part in (
        Path("aider"),
        Path("openhands") / "runtime_trajs",
        Path("."),
        Path("aider") / "add-test.md",
    ):
        found = _ids([part])
        assert found and found == {name: whole[name] for name in found}, part


def _rerun(data_dir: Path, logs: Path, *, owner: str, project: str | None) -> tuple[int, int]:
    """(entries added, entries already there) after backfilling ``logs`` again, as the workers would."""
    store = fix_store(data_dir)
    groups: dict[str, list[FixEntry]] = {}
    for path in iter_files([logs]):
        if project is None and "aider" in path.parts:
            continue  # an Aider history is keyed by its folder: the legacy data's folder is gone
        for event in import_file(path, owner=owner, project=project).events:
            entry = extract(event).entry
            if entry is not None:
                groups.setdefault(event.project_key, []).append(entry)
    added = present = 0
    for key, entries in groups.items():
        result = store.append(owner, key, entries)
        added += len(result.added)
        present += len(entries) - len(result.added)
    return added, present


@pytest.mark.parametrize(("owner", "project"), [("t", None), ("p", "legacy")])
def test_rerunning_over_data_written_by_the_earlier_version_adds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, owner: str, project: str | None
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(LEGACY, data_dir)
    before = {p.name: p.read_bytes() for p in data_dir.rglob("*.jsonl")}
    logs = copy_logs(tmp_path / "elsewhere" / "agent-logs")
    monkeypatch.chdir(logs.parent)
    added, present = _rerun(data_dir, Path("agent-logs"), owner=owner, project=project)
    assert (added, present) == (0, 19 if project else 15)
    assert {p.name: p.read_bytes() for p in data_dir.rglob("*.jsonl")} == before
