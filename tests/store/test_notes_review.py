"""The review queue's memory (``store.notes.review``): real files in tmp_path."""

from __future__ import annotations

from pathlib import Path

from store.notes.review import ReviewState, notes_file, read_state, state_path, update_state


def test_answers_are_kept_once_and_survive_a_reread(tmp_path: Path) -> None:
    path = state_path(tmp_path, "alice", "/srv/app")
    assert path.is_relative_to(tmp_path / "ui" / "review")
    update_state(path, lambda s: s.reject("fix-a"))
    update_state(path, lambda s: s.reject("fix-a"))
    update_state(path, lambda s: s.approve("fix-b", "- decision: old"))
    update_state(path, lambda s: s.approve("fix-b", "- decision: edited"))
    state = read_state(path)
    assert state == ReviewState(["fix-a"], [{"fix_id": "fix-b", "note": "- decision: edited"}])
    assert state.answered() == {"fix-a", "fix-b"}
    assert notes_file(state) == "- decision: edited"


def test_a_file_it_did_not_write_reads_as_empty(tmp_path: Path) -> None:
    path = state_path(tmp_path, "alice", "/srv/app")
    path.parent.mkdir(parents=True)
    for junk in (b"[1, 2]", b"{not json", b'{"rejected": [1, "fix-a"], "approved": [{"fix_id": "x"}]}'):
        path.write_bytes(junk)
        assert read_state(path).approved == []
    assert read_state(path).rejected == ["fix-a"]
