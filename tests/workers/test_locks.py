"""The project lease lock: exclusive across processes, renewed while held, freed when its holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from ingest import keys
from tests.configs import fix_store
from tests.polling import wait_for
from workers.errors import LockLost, LockTimeout
from workers.locks import RedisLeaseLock, redis_lock_factory

ROOT = Path(__file__).resolve().parents[2]


def _children(redis_url: str, mode: str, path: Path, n: int, count: int) -> None:
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.workers.lock_child",
                mode,
                redis_url,
                str(path),
                str(count),
                f"t{i}",
            ],
            cwd=ROOT,
        )
        for i in range(n)
    ]
    for proc in procs:
        assert proc.wait(timeout=240) == 0


def _wait_renewed(client: redis.Redis, wanted: dict[str, int], timeout: float = 30.0) -> None:
    """Poll until each key's lease was extended (its PTTL went up) at least ``wanted[key]`` times; fails if
    a key is gone meanwhile (the lease lapsed)."""
    last = {key: client.pttl(key) for key in wanted}
    renewals = dict.fromkeys(wanted, 0)

    def renewed() -> bool:
        for key in wanted:
            ttl = client.pttl(key)
            assert ttl > 0, f"the lease on {key} lapsed"
            renewals[key] += ttl > last[key]
            last[key] = ttl
        return all(renewals[key] >= n for key, n in wanted.items())

    wait_for(renewed, timeout, f"renewals {wanted}", every=0.01)


def test_processes_under_the_lock_never_overlap(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    _children(redis_url, "counter", counter, n=4, count=40)
    assert counter.read_text() == "160"  # a read-modify-write without exclusion loses increments


def test_store_writers_in_separate_processes_lose_nothing(
    redis_url: str, redis_client: redis.Redis, data_dir: Path
) -> None:
    _children(redis_url, "append", data_dir, n=4, count=25)
    read = fix_store(data_dir).read("owner", "project")
    assert len(read.entries) == 100
    assert len({e.id for e in read.entries}) == 100
    assert read.malformed == [] and not read.incomplete_tail


def test_the_lease_is_renewed_while_held(redis_client: redis.Redis) -> None:
    key = keys.project_lock("o", "p")
    with RedisLeaseLock(redis_client, key, lease=0.3, wait=1.0):
        _wait_renewed(redis_client, {key: 9})  # renewed every third of a lease: three leases long
        with (
            pytest.raises(LockTimeout, match="still held"),
            RedisLeaseLock(redis_client, key, lease=0.3, wait=0.2),
        ):
            pass
    assert not redis_client.exists(key)


def test_a_killed_holder_frees_the_project_after_the_lease(redis_url: str, redis_client: redis.Redis) -> None:
    code = (
        "import time, redis; from workers.locks import RedisLeaseLock; from ingest import keys\n"
        f"client = redis.Redis.from_url({redis_url!r})\n"
        "lock = RedisLeaseLock(client, keys.project_lock('o', 'p'), lease=1.0, wait=5)\n"
        "lock.__enter__(); print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    started = time.monotonic()
    with RedisLeaseLock(redis_client, keys.project_lock("o", "p"), lease=1.0, wait=10.0):
        waited = time.monotonic() - started
    assert waited < 5.0  # freed by the lapsed lease, not by the holder


def test_a_lapsed_lease_is_reported(redis_client: redis.Redis) -> None:
    key = keys.project_lock("o", "p")
    with pytest.raises(LockLost, match="lapsed"), RedisLeaseLock(redis_client, key, lease=0.3, wait=1.0):
        redis_client.delete(key)  # as if the holder had been paused past its lease: the release finds it gone


def test_factory_locks_per_project(redis_client: redis.Redis) -> None:
    factory = redis_lock_factory(redis_client, lease=5, wait=0.2)
    with factory("o", "p1"), factory("o", "p2"):  # different projects do not wait for each other
        assert redis_client.exists(keys.project_lock("o", "p1"), keys.project_lock("o", "p2")) == 2
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with factory("o", "p1"):
            held.set()
            release.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    with pytest.raises(LockTimeout), factory("o", "p1"):
        pass
    release.set()
    thread.join()


def test_one_renewal_thread_per_process_renews_every_held_lock(redis_client: redis.Redis) -> None:
    short, long_ = keys.project_lock("o", "short"), keys.project_lock("o", "long")
    for i in range(20):  # many uses start no thread each
        with RedisLeaseLock(redis_client, keys.project_lock("o", f"p{i}"), lease=5, wait=1):
            pass
    with (
        RedisLeaseLock(redis_client, short, lease=0.3, wait=1.0),
        RedisLeaseLock(redis_client, long_, lease=0.9, wait=1.0),
    ):
        _wait_renewed(redis_client, {short: 15, long_: 5})  # five short leases, nearly two long ones
        renewers = [t for t in threading.enumerate() if t.name == "lease-lock renewer"]
        assert len(renewers) == 1
    assert not redis_client.exists(short, long_)
