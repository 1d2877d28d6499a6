"""ingest.changed_files: a real git repository in tmp_path, snapshots at turn start and end."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ingest import publish
from ingest.changed_files import TreeSnapshot, changed_files, snapshot
from ingest.schema import TurnEvent
from workers.extraction import extract


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.com")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "src").mkdir()
    for name in ("a.py", "b.py", "c.py", "d.py"):
        (tmp_path / "src" / name).write_text(f"{name} = 1\n")
    (tmp_path / ".gitignore").write_text("*.log\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def test_only_what_the_turn_changed_is_counted(repo: Path) -> None:
    (repo / "src" / "a.py").write_text("changed by an earlier turn\n")  # dirty before the turn
    (repo / "src" / "d.py").write_text("also an earlier turn\n")
    before = snapshot(str(repo))
    # the turn: edits b, creates e, deletes c, brings d back to its committed state, logs to x.log
    (repo / "src" / "b.py").write_text("b = 2\n")
    (repo / "src" / "e.py").write_text("e = 1\n")
    (repo / "src" / "c.py").unlink()
    _git(repo, "checkout", "--", "src/d.py")
    (repo / "run.log").write_text("ignored\n")
    after = snapshot(str(repo / "src"))  # from a subdirectory: paths stay relative to the root
    assert changed_files(before, after) == ["src/b.py", "src/c.py", "src/d.py", "src/e.py"]


def test_an_untouched_tree_changes_nothing(repo: Path) -> None:
    (repo / "src" / "a.py").write_text("dirty\n")
    assert changed_files(snapshot(str(repo)), snapshot(str(repo))) == []


def test_a_file_changed_twice_in_the_turn_compares_contents(repo: Path) -> None:
    (repo / "src" / "a.py").write_text("one\n")
    before = snapshot(str(repo))
    (repo / "src" / "a.py").write_text("two\n")
    assert changed_files(before, snapshot(str(repo))) == ["src/a.py"]


def test_no_repository_or_too_many_files_gives_no_list(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("not-a-repo")
    assert snapshot(str(outside)) is None
    assert snapshot(str(outside / "missing")) is None
    for index in range(5):
        (repo / f"new{index}.py").write_text("x\n")
    assert snapshot(str(repo), max_files=3) is None
    assert changed_files(None, snapshot(str(repo))) is None


def test_a_large_file_is_fingerprinted_by_size_and_time(repo: Path) -> None:
    (repo / "big.bin").write_bytes(b"x" * 2048)
    taken = snapshot(str(repo), max_file_bytes=1024)
    assert taken is not None
    assert taken.files["big.bin"].startswith("size:2048:mtime:")


def test_changed_files_is_pure() -> None:
    before = TreeSnapshot({"a.py": "1", "b.py": "2"})
    after = TreeSnapshot({"b.py": "3", "c.py": "4"})
    assert changed_files(before, after) == ["a.py", "b.py", "c.py"]


def test_extraction_takes_the_harness_list_as_the_truth(repo: Path) -> None:
    before = snapshot(str(repo))
    (repo / "src" / "b.py").write_text("b = 2\n")
    listed = changed_files(before, snapshot(str(repo)))
    event = TurnEvent.model_validate(
        {
            "v": 1,
            "ts": 1.0,
            "owner": "u",
            "project_key": str(repo),
            "workspace": str(repo),
            "tool_events": [
                {
                    "tool": "bash",
                    "input": {"command": "python tools/regen.py && cat > notes.txt <<EOF\nx\nEOF"},
                }
            ],
            "harness_meta": {"harness": "mini-swe-agent", "changed_files": listed},
        }
    )
    entry = extract(event).entry
    assert entry is not None
    assert entry.files == ["src/b.py"]


def test_the_publisher_sdk_attaches_the_list_and_extraction_uses_it(repo: Path) -> None:
    (repo / "src" / "a.py").write_text("left dirty by an earlier turn\n")
    before = publish.snapshot(str(repo))
    (repo / "src" / "b.py").write_text("b = 2\n")  # the turn's edit, made by a script the log cannot read
    event = {
        "v": 1,
        "ts": 1.0,
        "owner": "u",
        "workspace": str(repo),
        "tool_events": [{"tool": "bash", "input": {"command": "python tools/regen.py"}, "exit_code": 0}],
        "harness_meta": {"harness": "my-agent"},
    }
    attached = publish.with_changed_files(event, before)
    assert attached["harness_meta"] == {"harness": "my-agent", "changed_files": ["src/b.py"]}
    assert "changed_files" not in event["harness_meta"]  # the caller's event is not changed
    entry = extract(TurnEvent.model_validate_json(publish.encode_event(attached))).entry
    assert entry is not None and entry.files == ["src/b.py"]


def test_the_sdk_sends_no_list_when_git_cannot_tell(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    plain = tmp_path_factory.mktemp("not-a-repo")
    event = {"v": 1, "ts": 1.0, "owner": "u", "workspace": str(plain), "tool_events": []}
    assert publish.with_changed_files(event, snapshot(str(plain))) == event
    given = {**event, "workspace": str(repo), "harness_meta": {"changed_files": ["kept.py"]}}
    assert publish.with_changed_files(given, snapshot(str(repo)))["harness_meta"]["changed_files"] == [
        "kept.py"
    ]
    assert publish.with_changed_files({**event, "workspace": str(repo)}, None) == {
        **event,
        "workspace": str(repo),
    }
