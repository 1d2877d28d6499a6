"""SIGKILL a worker in the middle of a rotation: the log stays intact and the next worker finishes the job.

A worker under ``tests.reliability.faults`` pauses inside the rotation's atomic rewrite — halfway through
writing the temp file, with the temp file complete but not yet renamed, or right after the rename (before
the directory fsync and the index) — and is SIGKILLed there. At that moment readers must see a whole log
(the old one or the new one, every line valid). A plain worker then takes the abandoned job over: the log
ends as the rotation policy says (the same kept set as rotating all the entries at once), its index
matches it, and no temp file is left behind.
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
from workers.extraction import extract

OWNER, PROJECT, CAP = "alice", "github.com/acme/rotating", 20
KINDS = ("fixed", "unverified", "partial", "fixed", "unverified")


def _events(start: int, count: int) -> list[dict[str, object]]:
    return [
        turn(i, owner=OWNER, project=PROJECT, kind=KINDS[i % len(KINDS)], event_id=f"ev-rot-{i}")  # type: ignore[arg-type]
        for i in range(start, start + count)
    ]


def _publish(client: redis.Redis, events: list[dict[str, object]]) -> None:
    publish_all(client, [Item("valid", {b"event": orjson.dumps(e)}, "entry") for e in events])


def _whole(data_dir: Path) -> list[str]:
    """The log as a reader sees it, checked line by line; returns its ids."""
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    raw = files.log.read_bytes()
    assert raw.endswith(b"\n"), "torn last line"
    ids = [orjson.loads(line)["id"] for line in raw.splitlines()]
    result = fix_store(data_dir).read(OWNER, PROJECT)
    assert result.malformed == [] and not result.incomplete_tail
    assert [e.id for e in result.entries] == ids
    return ids


@pytest.mark.parametrize(
    "point",
    [
        pytest.param("pause-mid-temp", marks=pytest.mark.chaos),
        "pause-before-replace",  # the normal suite: the temp file whole, the rename not done
        pytest.param("pause-after-replace", marks=pytest.mark.chaos),
    ],
)
def test_a_worker_killed_mid_rotation_leaves_the_log_whole(
    point: str, redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    env = {**FAST, "FIXMEM_ROTATION_CAP": str(CAP), "FIXMEM_ROTATION_SLACK": "0"}  # the append that crosses
    # the cap rewrites (with slack it would be the one past cap + slack: the same rewrite, later)
    settings = Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), **env})
    first, second = _events(0, CAP), _events(CAP, 10)
    fault = {"RELIABILITY_FAULT": point, "RELIABILITY_FAULT_DIR": str(tmp_path)}
    with fleet(redis_url, data_dir, tmp_path / "logs", workers=0, consumers=0, settings=env) as running:
        _publish(redis_client, first)
        Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
        running.add("worker", "plain")
        wait_for(
            lambda: len(fix_store(data_dir).read(OWNER, PROJECT).entries) == CAP, 60, "the first entries"
        )
        running.kill("plain")

        _publish(redis_client, second)  # one job of 10: the log goes over the cap and rotates
        Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
        running.add("worker", "faulty", wrapper=["-m", "tests.reliability.faults"], env=fault)
        wait_for((tmp_path / "paused").exists, 60, f"the worker to reach {point}")
        running.kill("faulty")

        at_kill = _whole(data_dir)  # the old log (before the rename) or the new one (after it)
        assert len(at_kill) == CAP
        running.add("worker", "rescuer")
        wait_for(lambda: redis_client.keys("fixmem:batch:*") == [], 60, "the abandoned job to be finished")

    entries = [extract(validate_event(e)).entry for e in first + second]
    kept = {e.id for e in plan_rotation([e for e in entries if e is not None], CAP).keep}
    final = _whole(data_dir)
    assert len(final) == CAP and set(final) == kept  # exactly what one rotation of all 30 keeps
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    result = fix_store(data_dir).read(OWNER, PROJECT)
    assert read_index(files.index) == build_index(result.entries)
    leftovers = sorted(p.name for p in files.directory.iterdir() if p.name.endswith(".tmp"))
    assert leftovers == [], f"temp files of the killed rotation were left behind: {leftovers}"
    print(f"\n{point}: killed mid-rotation; log whole at the kill ({len(at_kill)} entries) and after "
          f"recovery ({len(final)} entries, the policy's kept set); no temp file left")  # fmt: skip
