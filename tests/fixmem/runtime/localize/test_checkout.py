"""The per-checkout index on disk: listed by git, cached per root and HEAD, refreshed by mtime."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fixmem.runtime.localize import checkout as ck
from fixmem.runtime.localize.build import BUSY, FAILED, OK, main
from store.localize import localize
from tests.fixmem.runtime.localize.checkout_repo import commit_all, git, make_checkout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_checkout(tmp_path / "widgets")


def test_the_index_round_trips_through_the_cache(repo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    found = ck.checkout_of(str(repo / "invoicer"))  # from a subdirectory: the root
    assert found is not None and found.root == str(repo) and len(found.head) == 40
    built = ck.build(cache, found)
    assert ck.load_index(cache, found) == built
    assert set(built.files) == {
        "invoicer/totals.py", "invoicer/csv_io.py", "server/main.go", "web/login.ts", "core/src/lib.rs",
        "README.md",
    }  # fmt: skip
    for name, path in [
        ("apply_discount", "invoicer/totals.py"),
        ("StartServer", "server/main.go"),
        ("renderLoginForm", "web/login.ts"),
        ("merge_intervals", "core/src/lib.rs"),
    ]:
        assert built.defs[name] == (path,)
    got = localize("apply_discount raises for a zero quantity", built)
    assert got and got[0].path == "invoicer/totals.py"


def test_untracked_huge_and_binary_files_stay_out(repo: Path, tmp_path: Path) -> None:
    (repo / "scratch.py").write_text("def untracked_helper(): pass\n")  # not in git ls-files
    (repo / "big.py").write_text("def huge_generated(): pass\n" + "#" * (ck.MAX_FILE_BYTES + 1))
    (repo / "blob.py").write_bytes(b"def binary_thing(): pass\n\0\0")
    git(repo, "add", "big.py", "blob.py")  # only these two are committed
    git(repo, "commit", "-qm", "big")
    found = ck.checkout_of(str(repo))
    assert found is not None
    built = ck.build(str(tmp_path / "cache"), found)
    assert "scratch.py" not in built.files and "untracked_helper" not in built.defs
    assert {"big.py", "blob.py"} <= set(built.files)  # listed by name
    assert "huge_generated" not in built.defs and "binary_thing" not in built.defs  # never read


def _same_stat_other_text(path: Path, text: str) -> None:
    """Rewrite ``path`` with ``text`` of the same length, keeping its mtime: a file a refresh must not
    read again (its facts would change if it did)."""
    info = path.stat()
    old = path.read_text()
    assert len(text) == len(old)
    path.write_text(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_refresh_reads_only_the_files_whose_mtime_changed(repo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    found = ck.checkout_of(str(repo))
    assert found is not None
    ck.build(cache, found)
    _same_stat_other_text(repo / "invoicer/csv_io.py", "def parse_tsv(text):\n    return text.split(',')\n")
    (repo / "server/main.go").write_text("package main\n\nfunc StartListener() error { return nil }\n")
    again = ck.build(cache, found)
    assert "parse_csv" in again.defs and "parse_tsv" not in again.defs  # same mtime and size: not read
    assert "StartListener" in again.defs and "StartServer" not in again.defs  # changed: read again


def test_a_new_head_starts_from_the_facts_of_the_last_one(repo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    first = ck.checkout_of(str(repo))
    assert first is not None
    ck.build(cache, first)
    (repo / "web/extra.ts").write_text("export function newWidget() {}\n")
    head = commit_all(repo)
    _same_stat_other_text(repo / "invoicer/csv_io.py", "def parse_tsv(text):\n    return text.split(',')\n")
    second = ck.Checkout(str(repo), head)
    built = ck.build(cache, second)
    assert "newWidget" in built.defs and "parse_csv" in built.defs  # the unchanged file's facts reused
    assert ck.load_index(cache, first) is not None  # both heads cached


def test_a_corrupt_cache_is_rebuilt(repo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    found = ck.checkout_of(str(repo))
    assert found is not None
    built = ck.build(cache, found)
    for path, junk in [
        (ck.index_path(cache, found), b"{not json"),
        (ck.facts_path(cache, found), json.dumps({"v": 1, "files": {"x.py": "nonsense"}}).encode()),
    ]:
        Path(path).write_bytes(junk)
    assert ck.load_index(cache, found) is None and ck.load_facts(ck.facts_path(cache, found)) == {}
    Path(ck.index_path(cache, found)).write_text(json.dumps({"v": 1, "root": str(repo), "index": {"x": 1}}))
    assert ck.load_index(cache, found) is None  # parses, wrong shape
    ck.build(cache, found)
    whole = Path(ck.index_path(cache, found)).read_bytes()
    Path(ck.index_path(cache, found)).write_bytes(whole.rsplit(b"\n", 1)[0])  # torn: its last line lost
    assert ck.load_index(cache, found) is None
    assert ck.build(cache, found) == built  # everything read again
    assert ck.load_index(cache, found) == built


def test_the_build_child_exits_busy_failed_or_ok(repo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    found = ck.checkout_of(str(repo))
    assert found is not None
    argv = ["--cache-dir", cache, "--root", found.root, "--head", found.head]
    with ck.build_lock(cache, found.root):
        assert main(argv) == BUSY  # one build of a root at a time
    assert main(["--cache-dir", cache, "--root", str(tmp_path / "gone"), "--head", found.head]) == FAILED
    assert main(argv) == OK
    assert ck.load_index(cache, found) is not None


def test_outside_git_there_is_no_checkout(tmp_path: Path) -> None:
    assert ck.checkout_of(str(tmp_path)) is None
    assert ck.checkout_of(str(tmp_path / "missing")) is None


def test_the_checkout_is_read_from_git_files_as_git_says_it(repo: Path, tmp_path: Path) -> None:
    said = ck._ask_git(str(repo / "web"), ck.GIT_TIMEOUT_SECONDS)
    assert said is not None and ck._read_checkout(str(repo / "web")) == said
    git(repo, "pack-refs", "--all")  # the branch only in packed-refs now
    assert ck._read_checkout(str(repo)) == said
    git(repo, "worktree", "add", "-q", str(tmp_path / "other"), "-b", "other")  # a .git file, a commondir
    other = ck._ask_git(str(tmp_path / "other"), ck.GIT_TIMEOUT_SECONDS)
    assert other is not None and ck._read_checkout(str(tmp_path / "other")) == other
    git(repo, "checkout", "-q", "--detach")
    assert ck._read_checkout(str(repo)) == said  # a detached HEAD holds the sha itself


def test_a_git_directory_without_head_is_no_checkout(tmp_path: Path) -> None:
    (tmp_path / "w" / ".git").mkdir(parents=True)  # a config, no repository: as bench.hooks makes one
    (tmp_path / "w" / ".git" / "config").write_text('[remote "origin"]\n\turl = https://x/y.git\n')
    assert ck.checkout_of(str(tmp_path / "w")) is None


def test_a_build_with_nothing_changed_only_touches_the_index(repo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    found = ck.checkout_of(str(repo))
    assert found is not None
    built = ck.build(cache, found)
    index = Path(ck.index_path(cache, found))
    before = index.stat()
    os.utime(index, (before.st_atime - 100, before.st_mtime - 100))
    assert ck.build(cache, found) is None  # nothing changed
    after = index.stat()
    assert after.st_ino == before.st_ino and after.st_mtime > before.st_mtime - 100  # touched, not rewritten
    (repo / "web/extra.ts").write_text("export function newWidget() {}\n")
    git(repo, "add", "web/extra.ts")  # a new tracked file, same HEAD
    again = ck.build(cache, found)
    assert again is not None and "newWidget" in again.defs and again != built
