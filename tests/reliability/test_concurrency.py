"""Eight worker processes write the same project while rotation runs: no torn line, nothing lost but what
the rotation policy drops.

Many small jobs of one project (``FIXMEM_JOB_MAX_EVENTS``) are run by eight ``fixmem worker`` processes
at once, serialized by the project's Redis lease lock (the multi-host setting), with a small cap so nearly
every append rotates. At the end: every line of the log is whole and valid, no id twice, nothing
quarantined, no temp file; the log holds exactly what the rotation policy keeps from *all* the entries
(the policy depends only on the set, so any interleaving must end there); the index matches; and the
fleet counters add up (recorded = entries, dropped by rotation = entries - cap).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import redis

from fixmem import wiring
from fixmem.settings import Settings
from ingest.consumer import Consumer
from ingest.schema import validate_event
from store.paths import project_files
from store.persist.fixlog import read_index
from store.persist.rotation import plan_rotation
from store.recall.index import build_index
from tests.configs import fix_store
from tests.ingest.turns import turn
from tests.reliability.corpus import Item
from tests.reliability.fleet import FAST, fleet, wait_for
from tests.reliability.publisher import publish_all
from workers.counters import read_counters
from workers.extraction import extract

OWNER, PROJECT = "alice", "github.com/acme/contended"
KINDS = ("fixed", "unverified", "partial", "unverified", "fixed", "no_files")


def contended_run(
    redis_url: str, client: redis.Redis, data_dir: Path, log_dir: Path, *, events: int, cap: int, lock: str
) -> str:
    """Publish ``events`` turns of one project, run them with 8 workers; check the log; return figures."""
    env = {**FAST, "FIXMEM_ROTATION_CAP": str(cap), "FIXMEM_JOB_MAX_EVENTS": "4", "FIXMEM_STORE_LOCK": lock}
    settings = Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), **env})
    turns = [
        turn(i, owner=OWNER, project=PROJECT, kind=KINDS[i % len(KINDS)], event_id=f"ev-c-{i}")  # type: ignore[arg-type]
        for i in range(events)
    ]
    with fleet(redis_url, data_dir, log_dir, workers=8, consumers=0, settings=env) as running:
        wait_for(lambda: int(client.scard("rq:workers")) == 8, 120, "8 workers up")  # then the jobs, at once
        publish_all(client, [Item("valid", {b"event": orjson.dumps(t)}, "entry") for t in turns])
        Consumer(client, wiring.consumer_config(settings)).run(burst=True)
        jobs = len(client.keys("fixmem:batch:*"))
        wait_for(lambda: client.keys("fixmem:batch:*") == [], 600, "every job", every=0.25)
        per_worker = sorted(
            int(client.hget(key, "successful_job_count") or 0) for key in client.smembers("rq:workers")
        )
        crashes = running.crashes()
    assert crashes == {}

    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    raw = files.log.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    ids = [orjson.loads(line)["id"] for line in lines]  # every line whole JSON
    result = fix_store(data_dir, cap=cap).read(OWNER, PROJECT)  # a reader rotates to its own cap
    assert result.malformed == [] and not result.incomplete_tail
    # with rotation slack the file keeps up to cap + slack lines; readers apply the rotation order
    assert len(ids) == len(set(ids)) <= cap + settings.rotation_slack and len(result.entries) == cap
    assert not files.quarantine.exists()
    assert [p.name for p in files.directory.iterdir() if p.name.endswith(".tmp")] == []

    entries = [e for e in (extract(validate_event(t)).entry for t in turns) if e is not None]
    kept = {e.id for e in plan_rotation(entries, cap).keep}
    assert {e.id for e in result.entries} == kept <= set(ids)  # the policy, whatever the interleaving
    assert read_index(files.index) == build_index(result.entries)
    fleet_counts = read_counters(client)
    assert fleet_counts.events["recorded"] == len(entries) and fleet_counts.events["duplicate"] == 0
    assert sum(fleet_counts.rotation_dropped.values()) == len(entries) - cap
    return (
        f"8 workers ({lock} lock), {jobs} jobs of one project (jobs per worker {per_worker}), "
        f"{len(entries)} entries, cap {cap}: "
        f"{len(lines)} lines, all whole, 0 duplicated, 0 quarantined, kept set = the policy's; "
        f"rotation dropped {dict(fleet_counts.rotation_dropped)}"
    )


def test_eight_workers_on_one_project_with_rotation(
    redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    print("\n" + contended_run(redis_url, redis_client, data_dir, logs, events=160, cap=30, lock="redis"))


@pytest.mark.chaos
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("lock", ["redis", "local"])
def test_chaos_eight_workers_on_one_project_3000_events(
    lock: str, redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    print("\n" + contended_run(redis_url, redis_client, data_dir, logs, events=3000, cap=500, lock=lock))
