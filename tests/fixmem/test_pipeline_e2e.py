"""End to end on a real Redis and real files: publish -> consume -> work -> entries on disk -> recall."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fixmem import wiring
from fixmem.settings import Settings
from ingest import keys
from ingest.consumer import Consumer
from ingest.publish import publish_many
from store import FixStore, prompt_block
from tests.configs import fix_store
from tests.ingest.turns import turn
from workers.counters import read_counters
from workers.jobs import install
from workers.worker import run_worker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def settings(redis_url: str, data_dir: Path) -> Settings:
    return Settings.from_env(
        {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_READ_BLOCK_MS": "20"}
    )


@pytest.fixture(autouse=True)
def _keep_signal_handlers() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    install(None)
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def drain(settings: Settings, client: redis.Redis, *, consumer: str = "c1") -> None:
    """Run the consumer and one worker until there is nothing left (in this process)."""
    Consumer(client, wiring.consumer_config(settings, name=consumer)).run(burst=True)
    install(wiring.worker_context(settings, client))
    run_worker(client, wiring.worker_options(settings), burst=True)


def store(settings: Settings) -> FixStore:
    return fix_store(settings.data_dir)


def test_one_project_from_publish_to_recall(settings: Settings, redis_client: redis.Redis) -> None:
    kinds = ("fixed", "partial", "unverified", "no_files")
    publish_many(redis_client, [turn(i, kind=kinds[i % 4]) for i in range(12)])
    drain(settings, redis_client)
    entries = store(settings).read("alice", "github.com/acme/widgets").entries
    assert sorted(e.outcome for e in entries) == ["fixed"] * 3 + ["partial"] * 3 + ["unverified"] * 3
    recalled = store(settings).recall("alice", "github.com/acme/widgets", "parse_mod4 should split on commas")
    assert recalled and recalled[0].entry.files == ["src/mod4.py"]
    block = prompt_block(recalled, 600, now=time.time())
    assert block.startswith("Past fixes in this project") and "mod4" in block
    fleet = read_counters(redis_client)
    assert fleet.events["recorded"] == 9 and fleet.events["skipped_no_files"] == 3
    assert fleet.entries == {"fixed": 3, "partial": 3, "unverified": 3}
    assert redis_client.keys(keys.batch("*")) == []


def test_many_projects_and_owners(settings: Settings, redis_client: redis.Redis) -> None:
    events = [turn(i, owner=f"team{i % 3}", project=f"repo{i % 7}") for i in range(210)]
    publish_many(redis_client, events)
    drain(settings, redis_client)
    total = 0
    for owner in ("team0", "team1", "team2"):
        for project in store(settings).projects(owner):
            entries = store(settings).read(owner, project).entries
            assert all(e.project == project for e in entries)
            total += len(entries)
    assert total == 210
    assert read_counters(redis_client).events["recorded"] == 210


def test_republished_turns_are_not_recorded_twice(settings: Settings, redis_client: redis.Redis) -> None:
    events = [turn(i) for i in range(20)]
    publish_many(redis_client, events)
    drain(settings, redis_client)
    publish_many(redis_client, events + events[:5])  # a harness retried everything
    drain(settings, redis_client)
    assert len(store(settings).read("alice", "github.com/acme/widgets").entries) == 20
    fleet = read_counters(redis_client)
    assert (fleet.events["recorded"], fleet.events["duplicate"]) == (20, 25)


def test_invalid_events_are_dead_lettered_and_the_rest_recorded(
    settings: Settings, redis_client: redis.Redis
) -> None:
    publish_many(redis_client, [turn(i) for i in range(5)])
    for bad in (b"{", b"[]", b'{"v": 2}', b'{"v": 1, "ts": 1, "owner": "../x", "project_key": "p"}'):
        redis_client.xadd(keys.DEFAULT_STREAM, {"event": bad})
    publish_many(redis_client, [turn(i) for i in range(5, 10)])
    drain(settings, redis_client)
    assert len(store(settings).read("alice", "github.com/acme/widgets").entries) == 10
    assert redis_client.xlen(keys.DEFAULT_DEAD_STREAM) == 4
    fleet = read_counters(redis_client)
    assert fleet.events["dead_letter"] == 4 and fleet.events["recorded"] == 10


def test_a_consumer_stopped_mid_batch_is_taken_over(settings: Settings, redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i, project=f"p{i % 2}") for i in range(40)])
    first = Consumer(redis_client, wiring.consumer_config(settings, name="first"))
    first.setup()
    reply = redis_client.xreadgroup(keys.DEFAULT_GROUP, "first", {keys.DEFAULT_STREAM: ">"}, count=25)
    held = [i for i, _ in reply[0][1]]  # then it died
    second_config = wiring.consumer_config(settings.with_overrides(claim_idle_seconds=60), name="second")
    # a minute passes without "first" acking: XCLAIM ... IDLE gives its entries that idle time
    redis_client.xclaim(keys.DEFAULT_STREAM, keys.DEFAULT_GROUP, "first", 0, held, idle=61_000)
    stats = Consumer(redis_client, second_config).run(burst=True)
    assert (stats.reclaimed, stats.handled) == (25, 40)
    install(wiring.worker_context(settings, redis_client))
    run_worker(redis_client, wiring.worker_options(settings), burst=True)
    entries = [e for p in ("p0", "p1") for e in store(settings).read("alice", p).entries]
    assert len(entries) == len({e.id for e in entries}) == 40


def _worker_process(settings: Settings, *args: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "FIXMEM_REDIS_URL": str(settings.redis_url),
        "FIXMEM_DATA_DIR": str(settings.data_dir),
    }
    return subprocess.Popen([sys.executable, "-m", "fixmem", "worker", *args], cwd=ROOT, env=env)


def test_two_worker_processes_counts_add_up(settings: Settings, redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i, project=f"p{i % 10}") for i in range(300)])
    Consumer(redis_client, wiring.consumer_config(settings.with_overrides(job_max_events=5))).run(burst=True)
    assert redis_client.llen("rq:queue:fixmem-live") == 60
    workers = [_worker_process(settings, "--burst") for _ in range(2)]
    for worker in workers:
        assert worker.wait(timeout=240) == 0
    fleet = read_counters(redis_client)
    on_disk = [e for p in range(10) for e in store(settings).read("alice", f"p{p}").entries]
    assert fleet.events["recorded"] == len(on_disk) == 300
    assert sum(fleet.entries.values()) == 300
    assert fleet.pipeline["jobs_done"] == 60
    assert fleet.event_to_entry.count == 300


def test_plain_rq_worker_runs_the_jobs(settings: Settings, redis_client: redis.Redis) -> None:
    publish_many(redis_client, [turn(i) for i in range(6)])
    Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
    env = {**os.environ, "FIXMEM_DATA_DIR": str(settings.data_dir)}
    rq = Path(sys.executable).parent / "rq"
    done = subprocess.run(
        [str(rq), "worker", "--burst", "-w", "fixmem.runtime.rq_worker.Worker", "-u", str(settings.redis_url),
         "fixmem-live", "fixmem-backfill"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(store(settings).read("alice", "github.com/acme/widgets").entries) == 6
    assert read_counters(redis_client).events["recorded"] == 6


@pytest.mark.parametrize("one_batch", [False, True])
def test_a_late_replay_of_an_older_turn_recalls_the_newer_fix(
    settings: Settings, redis_client: redis.Redis, one_batch: bool
) -> None:
    """Issue 29: publish the newer turn of a lineage, then the older; recall returns the newer."""
    newer = turn(4, ts=1_789_344_000.0, event_id="turn-newer")  # 2026-09-14
    older = turn(4, ts=1_783_296_000.0, event_id="turn-older")  # 2026-07-06, the same fix two months before
    publish_many(redis_client, [newer])
    if not one_batch:
        drain(settings, redis_client)
    publish_many(redis_client, [older])
    drain(settings, redis_client)
    fixes = store(settings)
    entries = fixes.read("alice", "github.com/acme/widgets").entries
    assert sorted(e.ts for e in entries) == [older["ts"], newer["ts"]]
    recalled = fixes.recall("alice", "github.com/acme/widgets", older["user_message"], now=newer["ts"])
    assert [r.entry.ts for r in recalled] == [newer["ts"]]
    chain = fixes.lineage("alice", "github.com/acme/widgets", entries[0].id)
    assert [e.ts for e in chain] == [older["ts"], newer["ts"]]
