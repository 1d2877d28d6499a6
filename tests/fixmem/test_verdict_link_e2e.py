"""Verdicts by link end to end (issue 30): a real git repository, a real ``pytest --junitxml`` run, the CI
snippet ``deploy/ci/fixmem-verdict.sh`` as a real process, Redis, RQ and the fix log. A turn recorded with
the commit it made; CI's JUnit for that commit says its test failed -> the entry is ``partial`` by
``verdict:ci``, the agent's label kept; a failure elsewhere judges nothing and is counted; the counters
still equal the store."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from fixmem.cli import main
from fixmem.settings import Settings
from ingest.publish import publish_many
from store import FixEntry
from tests.configs import fix_store
from tests.fixmem.test_pipeline_e2e import _keep_signal_handlers, drain
from tests.ingest.turns import turn
from workers.counters import read_counters

__all__ = ["_keep_signal_handlers"]
OWNER, PROJECT = "alice", "github.com/acme/widgets"
SNIPPET = Path(__file__).resolve().parents[2] / "deploy" / "ci" / "fixmem-verdict.sh"
TEST_MOD = "from src.mod{i} import split\n\n\ndef test_split():\n    assert split('a,b') == {expected}\n"


@pytest.fixture
def settings(redis_url: str, data_dir: Path) -> Settings:
    return Settings.from_env(
        {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_READ_BLOCK_MS": "20"}
    )


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "widgets"
    root.mkdir()
    _git(root, "init", "-q")
    files = {"src/__init__.py": "", "tests/__init__.py": ""}
    for i in (1, 2):
        files[f"src/mod{i}.py"] = "def split(text):\n    return [text]\n"
        files[f"tests/test_mod{i}.py"] = TEST_MOD.format(i=i, expected="['a', 'b']")
    _commit(root, files, "start")
    yield root


def _agent_turn(repo: Path, i: int) -> tuple[dict[str, Any], str]:
    """The agent's fix of ``src/mod<i>.py`` committed in its turn, and the turn event saying so."""
    start = _git(repo, "rev-parse", "HEAD")
    end = _commit(repo, {f"src/mod{i}.py": "def split(text):\n    return text.split(',')\n"}, f"fix mod{i}")
    event = turn(i, kind="fixed")
    event["harness_meta"].update(commit_start=start, commit_end=end, dirty=False)
    return event, end


def _ci(repo: Path, settings: Settings, junit: Path, commit: str) -> subprocess.CompletedProcess[str]:
    """CI's two steps as real processes: ``pytest --junitxml``, then the snippet (from the repository)."""
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
        cwd=repo, capture_output=True, check=False, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    env = {
        **os.environ, "FIXMEM_REDIS_URL": str(settings.redis_url), "FIXMEM_OWNER": OWNER,
        "FIXMEM_PROJECT": PROJECT, "FIXMEM_COMMIT": commit, "FIXMEM_DETAIL": "https://ci.example/run/7",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }  # fmt: skip
    return subprocess.run(
        ["sh", str(SNIPPET), str(junit)], cwd=repo, capture_output=True, text=True, env=env, check=True
    )


def _entries(settings: Settings) -> dict[str, FixEntry]:
    return {e.files[0]: e for e in fix_store(settings.data_dir).read(OWNER, PROJECT).entries}


def test_ci_junit_for_a_turns_commit_judges_its_entry(
    settings: Settings,
    redis_client: redis.Redis,
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, c1 = _agent_turn(repo, 1)
    second, c2 = _agent_turn(repo, 2)
    publish_many(redis_client, [first, second])
    drain(settings, redis_client)
    assert {e.outcome for e in _entries(settings).values()} == {"fixed"}
    # CI on the first turn's commit: its own test fails there (the test expects another answer now).
    _commit(repo, {"tests/test_mod1.py": TEST_MOD.format(i=1, expected="['a,b']")}, "a stricter test")
    ci = _ci(repo, settings, tmp_path / "junit-1.xml", c1)
    assert "published verdict ci:partial on commit" in ci.stdout, ci.stderr
    # CI on the second turn's commit: only the first module's test fails, which does not cover mod2.
    ci = _ci(repo, settings, tmp_path / "junit-2.xml", c2)
    assert "published verdict ci:partial" in ci.stdout, ci.stderr
    drain(settings, redis_client)
    entries = _entries(settings)
    one, two = entries["src/mod1.py"], entries["src/mod2.py"]
    assert (one.outcome, one.outcome_source, one.agent_outcome) == ("partial", "verdict:ci", "fixed")
    assert (
        one.verdict is not None
        and "1 failed" in one.verdict["detail"]
        and "ci.example" in one.verdict["detail"]
    )
    assert (two.outcome, two.outcome_source, two.verdict) == ("fixed", None, None)
    fleet = read_counters(redis_client)
    assert fleet.verdicts == {"ci|partial|applied": 1}
    assert fleet.unlinked == {"failed_elsewhere": 1}
    assert fleet.overturns == {"ci|fixed|partial": 1}
    assert fleet.events["verdict"] == 2 and fleet.events["recorded"] == 2
    assert sum(fleet.entries.values()) == len(entries) and fleet.entries["fixed"] == 2  # the agent's labels
    monkeypatch.setenv("FIXMEM_REDIS_URL", str(settings.redis_url))
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "unlinked failed_elsewhere 1 (link verdicts not applied)" in capsys.readouterr().out


def test_a_link_nothing_matches_is_counted_not_applied(
    settings: Settings, redis_client: redis.Redis, repo: Path, tmp_path: Path
) -> None:
    event, _ = _agent_turn(repo, 1)
    publish_many(redis_client, [event])
    drain(settings, redis_client)
    other = _commit(repo, {"README.md": "a line nobody's turn wrote\n"}, "docs")
    _ci(repo, settings, tmp_path / "junit.xml", other)
    drain(settings, redis_client)
    [entry] = _entries(settings).values()
    assert (entry.outcome, entry.verdict) == ("fixed", None)
    assert read_counters(redis_client).unlinked == {"no_match": 1}
