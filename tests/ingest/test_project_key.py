"""The project key rule: one table for the remote URLs, real checkouts (made by git) for the file reads."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ingest.project_key import project_key_for, remote_key, remote_of_config

REMOTES = [
    # (remote URL, key)
    ("git@github.com:acme/widgets.git", "github.com/acme/widgets"),
    ("git@github.com:acme/widgets", "github.com/acme/widgets"),
    ("github.com:acme/widgets.git", "github.com/acme/widgets"),
    ("https://github.com/acme/widgets.git", "github.com/acme/widgets"),
    ("https://github.com/acme/widgets", "github.com/acme/widgets"),
    ("https://github.com/acme/widgets/", "github.com/acme/widgets"),
    ("https://github.com/acme/widgets.git/", "github.com/acme/widgets"),
    ("https://user:ghp_secret123@github.com/acme/widgets.git", "github.com/acme/widgets"),
    ("https://x-access-token:tok@GitHub.COM/acme/widgets", "github.com/acme/widgets"),
    (
        "https://oauth2:glpat-abc@gitlab.example.com:8443/group/sub/widgets.git",
        "gitlab.example.com/group/sub/widgets",
    ),
    ("ssh://git@github.com/acme/widgets.git", "github.com/acme/widgets"),
    ("ssh://git@github.com:22/acme/widgets.git", "github.com/acme/widgets"),
    ("ssh://git@git.example.com:2222/acme/widgets", "git.example.com/acme/widgets"),
    ("git+ssh://git@github.com/acme/widgets.git", "github.com/acme/widgets"),
    ("git://github.com/acme/widgets.git", "github.com/acme/widgets"),
    ("HTTPS://GITHUB.COM/Acme/Widgets.GIT", "github.com/Acme/Widgets"),  # the path keeps its case
    ("  git@bitbucket.org:team/app.git\n", "bitbucket.org/team/app"),
    ("ssh://git@[::1]:22/acme/widgets", "[::1]/acme/widgets"),
    ("/srv/git/widgets.git", None),  # a local remote names no shared repository
    ("../widgets", None),
    ("file:///srv/git/widgets.git", None),
    ("C:\\repos\\widgets", None),
    ("https://github.com/", None),
    ("https://github.com/../etc", None),
    ("", None),
]


@pytest.mark.parametrize(("url", "key"), REMOTES)
def test_remote_key(url: str, key: str | None) -> None:
    assert remote_key(url) == key


CONFIGS = [
    ('[remote "origin"]\n\turl = git@github.com:acme/widgets.git\n', "git@github.com:acme/widgets.git"),
    ('[core]\n\tbare = false\n[remote "upstream"]\n\turl = u\n[remote "origin"]\n\turl = o\n', "o"),
    ('[remote "upstream"]\n\turl = u\n', None),
    ('[Remote "origin"]\n\tURL = "https://h/a/b" ; comment\n', "https://h/a/b"),
    ('[remote "origin"] url = https://h/a/b\n', "https://h/a/b"),
    ("[remote.origin]\n\turl = https://h/a/b # comment\n", "https://h/a/b"),
    ('# [remote "origin"]\n#\turl = nope\n', None),
    ('[remote "Origin"]\n\turl = https://h/a/b\n', None),  # subsections are case-sensitive
    ('[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n', None),
]


@pytest.mark.parametrize(("text", "url"), CONFIGS)
def test_remote_of_config(text: str, url: str | None) -> None:
    assert remote_of_config(text) == url


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_a_checkout_is_keyed_by_its_origin_from_any_subdirectory(tmp_path: Path) -> None:
    repo = tmp_path / "widgets"
    (repo / "src" / "deep").mkdir(parents=True)
    _git("init", "-q", cwd=repo)
    _git("remote", "add", "origin", "https://ci:s3cr3t@GitHub.com/acme/widgets.git", cwd=repo)
    assert project_key_for(repo) == "github.com/acme/widgets"
    assert project_key_for(repo / "src" / "deep") == "github.com/acme/widgets"
    assert project_key_for(str(repo / "src")) == "github.com/acme/widgets"


@needs_git
def test_a_worktree_and_a_submodule_style_gitdir_file_read_the_shared_config(tmp_path: Path) -> None:
    repo = tmp_path / "main"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x", cwd=repo)
    _git("remote", "add", "origin", "git@github.com:acme/widgets.git", cwd=repo)
    _git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=repo)
    assert (tmp_path / "wt" / ".git").is_file()
    assert project_key_for(tmp_path / "wt") == "github.com/acme/widgets"


@needs_git
def test_a_checkout_without_origin_is_keyed_by_the_workspace_path(tmp_path: Path) -> None:
    repo = tmp_path / "local"
    (repo / "sub").mkdir(parents=True)
    _git("init", "-q", cwd=repo)
    _git("remote", "add", "upstream", "https://github.com/acme/widgets", cwd=repo)
    assert project_key_for(repo / "sub") == (repo / "sub").as_posix()


def test_outside_any_checkout_the_key_is_the_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(tmp_path)
    assert project_key_for("plain") == plain.as_posix()
    assert project_key_for(plain / "missing" / "..") == plain.as_posix()  # normalised, need not exist
    assert project_key_for("/no/such/dir") == "/no/such/dir"


def test_an_unreadable_or_broken_git_file_falls_back_to_the_path(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("not a gitdir line\n")
    assert project_key_for(broken) == broken.as_posix()
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / ".git").write_text("gitdir: ../nowhere\n")
    assert project_key_for(dangling) == dangling.as_posix()
