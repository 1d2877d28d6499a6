"""Where a turn sits in git (issue 30): ``ingest.git_place`` on a real repository, the Stop publisher's
``with_place``, the fields kept out of the turn's id and copied onto its entry."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fixmem.hooks.publisher import with_place
from ingest.git_place import head, place
from ingest.schema import validate_event
from tests.ingest.turns import turn
from workers.extraction import Limits, extract


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", "one")
    return tmp_path


def test_place_reads_head_and_the_dirty_tree(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    repo = _repo(tmp_path / "r")
    sha = _git(repo, "rev-parse", "HEAD")
    assert place(str(repo)) == {"commit_end": sha, "dirty": False} and head(str(repo)) == sha
    (repo / "a.py").write_text("x = 2\n")
    assert place(str(repo)) == {"commit_end": sha, "dirty": True}
    (tmp_path / "plain").mkdir()
    assert place(str(tmp_path / "plain")) == {} and place("") == {} and head("") is None


def test_the_stop_publisher_marks_the_last_turn_and_its_id_stays(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    event = validate_event(turn(1))
    placed = with_place(event, str(repo))
    assert placed.harness_meta.commit_end == _git(repo, "rev-parse", "HEAD")
    assert placed.harness_meta.dirty is False
    again = validate_event({**turn(1), "event_id": ""} | {"harness_meta": placed.harness_meta.model_dump()})
    assert again.event_id == event.event_id  # not part of the turn's identity


def test_the_entry_keeps_them_hex_only() -> None:
    body = turn(1)
    body["harness_meta"].update(commit_start="ABCDEF1", commit_end="HEAD", dirty=True, session_id="s-9")
    entry = extract(validate_event(body), enabled=True, limits=Limits()).entry
    assert entry is not None
    assert (entry.commit_start, entry.commit_end, entry.dirty, entry.session_id) == (
        "abcdef1",
        None,
        True,
        "s-9",
    )
