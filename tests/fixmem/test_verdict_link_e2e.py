"""Verdicts by link end to end (issue 30): a real git repository, a real ``pytest --junitxml`` run, the CI
snippet ``deploy/ci/fixmem-verdict.sh`` as a real process, Redis, RQ and the fix log. A turn recorded with
the commit it made; CI's JUnit for that commit says its test failed -> the entry is ``partial`` by
``verdict:ci``, the agent's label kept; a failure elsewhere judges nothing and is counted; the counters
still equal the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client import CollectorRegistry

from fixmem import service
from fixmem.cli import main
from fixmem.runtime.verified_metrics import VerifiedCollector
from fixmem.settings import Settings
from ingest.publish import publish_many
from store import FixEntry
from store.entry import OUTCOMES
from store.verdicts import agent_outcome
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


def _exported(settings: Settings) -> dict[str, float]:
    """Coverage and the verified fixed ratio as the API exports them (the rules' arithmetic), checked equal
    to a recount of the log's lines."""
    registry = CollectorRegistry()
    store = fix_store(settings.data_dir)
    registry.register(VerifiedCollector(lambda: service.fleet_summaries(store, [OWNER])))
    stored = {o: registry.get_sample_value("fixmem_stored_entries", {"outcome": o}) or 0.0 for o in OUTCOMES}
    judged = {
        o: registry.get_sample_value("fixmem_verified_entries", {"outcome": o}) or 0.0 for o in OUTCOMES
    }
    entries = list(_entries(settings).values())
    assert stored == {o: float(sum(agent_outcome(e) == o for e in entries)) for o in OUTCOMES}
    assert judged == {
        o: float(sum(e.verdict is not None and e.outcome == o for e in entries)) for o in OUTCOMES
    }
    total, verified = sum(stored.values()), sum(judged.values())
    return {
        "coverage": verified / total,
        "claimed": stored["fixed"] / total,
        "verified": judged["fixed"] / verified if verified else float("nan"),
    }


def test_git_revert_of_a_turns_commit_is_found_by_scan_git_once(
    settings: Settings,
    redis_client: redis.Redis,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, _ = _agent_turn(repo, 1)
    second, c2 = _agent_turn(repo, 2)
    third = turn(3, kind="fixed")  # a turn of no commit: nothing in git judges it
    publish_many(redis_client, [first, second, third])
    drain(settings, redis_client)
    assert _exported(settings) == {
        "coverage": 0.0,
        "claimed": 1.0,
        "verified": pytest.approx(float("nan"), nan_ok=True),
    }
    monkeypatch.setenv("FIXMEM_REDIS_URL", str(settings.redis_url))
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(settings.data_dir))
    scan = ["verdicts", "scan-git", "--repo", str(repo), "--owner", OWNER, "--project", PROJECT, "--json"]
    assert main(scan) == 0
    drain(settings, redis_client)
    # both commits landed on the default branch: merged, fixed
    assert {e.files[0]: e.outcome_source for e in _entries(settings).values()} == {
        "src/mod1.py": "verdict:merged", "src/mod2.py": "verdict:merged", "src/mod3.py": None,
    }  # fmt: skip
    assert _exported(settings) == {"coverage": 2 / 3, "claimed": 1.0, "verified": 1.0}
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@example.com", "revert", "--no-edit", c2)
    capsys.readouterr()
    assert main(scan) == 0
    assert json.loads(capsys.readouterr().out)["published"] >= 1
    drain(settings, redis_client)
    two = _entries(settings)["src/mod2.py"]
    assert (two.outcome, two.outcome_source, two.agent_outcome) == ("partial", "verdict:revert", "fixed")
    kept = {(v["source"], v.get("via")) for v in (two.model_extra or {})["verdicts"]}
    # the history keeps both: the landing and the revert in effect, each with how it was linked
    assert {("merged", "commit"), ("revert", "commit")} <= kept
    assert "its message says so" in (two.verdict or {})["detail"]
    after = _exported(settings)
    assert after == {"coverage": 2 / 3, "claimed": 1.0, "verified": 0.5}
    log = next((settings.data_dir / "fix_memory").rglob("*.jsonl"))
    before, fleet = log.read_bytes(), read_counters(redis_client)
    assert main(scan) == 0  # a second scan: nothing new
    assert json.loads(capsys.readouterr().out)["published"] == 0
    drain(settings, redis_client)
    assert log.read_bytes() == before and _exported(settings) == after
    assert read_counters(redis_client).verdicts == fleet.verdicts
    assert fleet.verdicts.get("revert|partial|applied", 0) >= 1
    assert fleet.overturns == {"revert|fixed|partial": 1}
    assert sum(fleet.entries.values()) == 3 and fleet.entries["fixed"] == 3  # counters equal the store
