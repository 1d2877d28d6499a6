"""``fixmem verdict``'s link form in-process: usage errors, refused reports, ``--print`` (HTTP)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fixmem.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "junit"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIXMEM_OWNER", "alice")
    monkeypatch.setenv("FIXMEM_PROJECT", "github.com/acme/widgets")


def _repo(tmp_path: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        ).stdout

    git("init", "-q")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git("add", "calc.py")
    git("-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", "one")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git("-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qam", "two")
    return git("rev-parse", "HEAD").strip()


def test_print_gives_the_http_body_with_the_commits_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = _repo(tmp_path)
    args = ["verdict", "--print", "--repo", str(tmp_path), "--commit", "HEAD", "--branch", "main",
            "--junit", str(FIXTURES / "nextest.xml"), "--detail", "https://ci.example/7"]  # fmt: skip
    assert main(args) == 0
    body = json.loads(capsys.readouterr().out)
    assert (body["outcome"], body["source"], body["project_key"]) == (
        "partial",
        "ci",
        "github.com/acme/widgets",
    )
    assert body["detail"] == "junit: 3 passed, 1 failed, 0 skipped https://ci.example/7"
    link = body["link"]
    assert (link["commit"], link["branch"], link["files"]) == (sha, "main", ["calc.py"])
    assert link["hunks"] == ["-return a - b", "+return a + b"]
    assert link["failed"] == ["widgets::calc::tests::subtracts"] and len(link["tests"]) == 4
    assert "owner" not in body


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--commit", "a" * 40], 2),  # no outcome nor reports
        (["--commit", "a" * 40, "--entry-id", "fix-" + "0" * 16, "--outcome", "fixed", "--source", "ci"], 2),
        (["--junit", "missing.xml", "--commit", "a" * 40], 66),
        (["--junit", str(FIXTURES / "README.md"), "--commit", "a" * 40], 65),
        (["--commit", "not-hex", "--outcome", "fixed", "--source", "ci"], 65),
    ],
)
def test_bad_input_gets_a_named_exit(tmp_path: Path, args: list[str], code: int) -> None:
    assert main(["verdict", "--print", "--repo", str(tmp_path), *args]) == code
