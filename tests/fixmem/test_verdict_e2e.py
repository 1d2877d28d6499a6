"""Verdicts end to end on a real Redis, real RQ and real files: ``publish_verdict`` and ``fixmem verdict``
-> consumer -> RQ worker -> the entry's outcome; before its turn, after it, twice, below a higher one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fixmem.cli import main
from fixmem.settings import Settings
from ingest.publish import publish_many, publish_verdict
from ingest.schema import validate_event
from store import FixEntry
from tests.configs import fix_store
from tests.fixmem.test_pipeline_e2e import _keep_signal_handlers, drain
from tests.ingest.turns import turn
from workers.counters import read_counters

__all__ = ["_keep_signal_handlers"]  # the autouse fixture of the pipeline tests, reused
OWNER, PROJECT = "alice", "github.com/acme/widgets"


@pytest.fixture
def settings(redis_url: str, data_dir: Path) -> Settings:
    return Settings.from_env(
        {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_READ_BLOCK_MS": "20"}
    )


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("FIXMEM_REDIS_URL", str(settings.redis_url))
    monkeypatch.setenv("FIXMEM_OWNER", OWNER)
    monkeypatch.setenv("FIXMEM_PROJECT", PROJECT)
    yield


def _only(settings: Settings) -> FixEntry:
    [entry] = fix_store(settings.data_dir).read(OWNER, PROJECT).entries
    return entry


def test_a_ci_verdict_before_and_after_its_turn(settings: Settings, redis_client: redis.Redis) -> None:
    partial = turn(1, kind="partial")
    event_id = validate_event(partial).event_id
    publish_verdict(
        redis_client, owner=OWNER, project_key=PROJECT, event_id=event_id, outcome="fixed", source="ci",
        detail="CI #88: 40 passed", ts=1_700_000_100.0,
    )  # fmt: skip
    drain(settings, redis_client)  # the verdict came first: it waits
    assert fix_store(settings.data_dir).read(OWNER, PROJECT).entries == []
    publish_many(redis_client, [partial])
    drain(settings, redis_client)
    entry = _only(settings)
    assert (entry.outcome, entry.agent_outcome, entry.outcome_source) == ("fixed", "partial", "verdict:ci")
    publish_verdict(  # the same verdict again, then a lower one: the judgment does not change ...
        redis_client, owner=OWNER, project_key=PROJECT, event_id=event_id, outcome="fixed", source="ci",
        detail="CI #88: 40 passed", ts=1_700_000_100.0,
    )  # fmt: skip
    publish_verdict(
        redis_client, owner=OWNER, project_key=PROJECT, entry_id=entry.id, outcome="partial", source="merged"
    )
    drain(settings, redis_client)
    after = _only(settings)
    assert after.model_dump(exclude={"verdicts"}) == entry.model_dump(exclude={"verdicts"})
    history = [(v["source"], v["outcome"]) for v in after.verdicts or []]
    assert history == [("ci", "fixed"), ("merged", "partial")]  # ... and the history keeps both, once
    fleet = read_counters(redis_client)
    assert fleet.verdicts == {
        "ci|fixed|held": 1, "ci|fixed|applied": 2, "merged|partial|superseded": 1,
    }  # fmt: skip
    assert fleet.events["verdict"] == 3 and fleet.events["recorded"] == 1
    assert fleet.entries["partial"] == 1


@pytest.mark.usefixtures("env")
def test_fixmem_verdict_from_a_ci_job(
    settings: Settings, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    publish_many(redis_client, [turn(2, kind="fixed")])
    drain(settings, redis_client)
    entry_id = _only(settings).id
    assert main(["verdict", "--entry-id", entry_id, "--outcome", "partial", "--source", "revert",
                 "--detail", "reverted in 4f2a9c1"]) == 0  # fmt: skip
    assert "published verdict revert:partial" in capsys.readouterr().out
    drain(settings, redis_client)
    entry = _only(settings)
    assert (entry.outcome, entry.outcome_source) == ("partial", "verdict:revert")
    assert entry.verdict is not None and entry.verdict["detail"] == "reverted in 4f2a9c1"
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "verdicts revert|partial|applied 1 (source|outcome|result)" in capsys.readouterr().out
    assert main(["verdict", "--outcome", "fixed", "--source", "ci"]) == 2  # no turn named
    assert main(["verdict", "--entry-id", "fix-nothex", "--outcome", "fixed", "--source", "ci"]) == 65
