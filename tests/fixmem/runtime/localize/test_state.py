"""What ``fixmem doctor`` and ``fixmem hook claude-code --check`` say of the checkout's index, read from the
real cache a real build writes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fixmem.cli import main
from fixmem.errors import ExitCode
from fixmem.runtime.localize import checkout as ck
from fixmem.runtime.localize.keeper import failed_path
from fixmem.runtime.localize.state import index_state
from tests.fixmem.runtime.localize.checkout_repo import SOURCES, commit_all, make_checkout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_checkout(tmp_path / "widgets")


def state(cache: Path, cwd: Path, *, enabled: bool = True) -> tuple[str, bool]:
    got = index_state(str(cache), str(cwd), enabled=enabled, now=time.time())
    return got.text, got.problem


def checkout(repo: Path) -> ck.Checkout:
    found = ck.checkout_of(str(repo))
    assert found is not None
    return found


def test_off_and_outside_a_checkout_are_text_only_and_no_problem(repo: Path, tmp_path: Path) -> None:
    assert state(tmp_path / "cache", repo, enabled=False) == (
        "off (FIXMEM_LOCALIZE=0): task-start recall is text only",
        False,
    )
    outside = tmp_path / "plain"
    outside.mkdir()
    text, problem = state(tmp_path / "cache", outside)
    assert "in no git checkout" in text and not problem


def test_cold_then_built_then_a_new_head_answers_with_the_old_index(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = checkout(repo)
    text, problem = state(cache, repo / "web")
    cold = "not indexed yet; the recall daemon builds it at the next prompt (text only until then)"
    assert text == f"{first.root} at {first.head[:12]}: {cold}"
    assert not problem
    assert ck.build(str(cache), first) is not None
    text, problem = state(cache, repo)
    assert text.startswith(f"{first.root} at {first.head[:12]}: indexed, {len(SOURCES)} files, built ")
    assert not problem
    (repo / "web/extra.ts").write_text("export function newWidget() {}\n")
    commit_all(repo)
    text, problem = state(cache, repo)
    assert f"the index of {first.head[:12]} answers until this HEAD's is built" in text and not problem


def test_a_running_build_is_said(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with ck.build_lock(str(cache), checkout(repo).root):
        text, problem = state(cache, repo)
    assert text.endswith("the first index builds now; recall is text only until it is done") and not problem


def test_a_failed_build_and_a_corrupt_index_are_problems(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    here = checkout(repo)
    Path(ck.root_dir(str(cache), here.root)).mkdir(parents=True)
    Path(failed_path(str(cache), here)).write_text("git ls-files timed out\n")
    text, problem = state(cache, repo)
    assert "the last build failed (git ls-files timed out); retried 5 minutes after it" in text and problem
    assert ck.build(str(cache), here) is not None
    Path(ck.index_path(str(cache), here)).write_text('{"v": 1, "lines": 7}\nnot json\n')
    text, problem = state(cache, repo)
    assert text.endswith("the cached index does not load; the next recall rebuilds it") and problem


def test_doctor_says_the_state_of_the_checkout_it_runs_in(
    repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_OWNER", "alice")
    monkeypatch.setenv("HOME", str(repo.parent / "home"))  # no hook installed for the user either
    monkeypatch.chdir(repo)
    assert main(["doctor"]) == ExitCode.OK
    assert "localize   " in capsys.readouterr().out
    assert ck.build(str(data_dir / "hooks" / "localize"), checkout(repo)) is not None
    assert main(["doctor"]) == ExitCode.OK
    assert f"indexed, {len(SOURCES)} files" in capsys.readouterr().out
    Path(failed_path(str(data_dir / "hooks" / "localize"), checkout(repo))).write_text("boom\n")
    Path(ck.index_path(str(data_dir / "hooks" / "localize"), checkout(repo))).unlink()
    assert main(["doctor"]) == ExitCode.FAILURE
    assert "the last build failed (boom)" in capsys.readouterr().out
