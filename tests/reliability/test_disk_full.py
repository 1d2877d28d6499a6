"""The disk fills up under the workers: a clear error, the store intact, the events not marked done, and
everything recorded once space returns.

Two ways to fill it:

- **injected** (runs anywhere): the worker runs under ``tests.reliability.faults`` with ``enospc``; while
  a flag file exists, every ``write`` into the data directory fails with ENOSPC (as the kernel says it).
- **tmpfs** (``-m chaos``; root only, skipped otherwise): the data directory — and, as ``fixmem up`` lays
  it out, the embedded Redis's AOF — live on a 4 MB tmpfs that a filler file fills to the last byte. This
  is the real kernel's ENOSPC, for the store and for Redis.

While full: the log is byte-for-byte what it was (no torn line), the batch waits in Redis (the job is
retried with backoff, nothing is counted), the worker's log names the file and says "no space left on
device". Once space returns, every event is recorded exactly once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import redis

from fixmem import wiring
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest.consumer import Consumer
from tests.configs import fix_store
from tests.ingest.turns import turn
from tests.reliability.corpus import Item
from tests.reliability.fleet import FAST, fleet, wait_for
from tests.reliability.publisher import publish_all
from workers.counters import read_counters

OWNER, PROJECT = "alice", "github.com/acme/full"


def _digest(data_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(data_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(data_dir.rglob("*"))
        if p.is_file() and "redis" not in p.parts and not p.name.startswith("filler")
    }


def _publish(client: redis.Redis, first: int, count: int) -> None:
    turns = [
        turn(i, owner=OWNER, project=PROJECT, event_id=f"ev-full-{i}") for i in range(first, first + count)
    ]
    publish_all(client, [Item("valid", {b"event": orjson.dumps(t)}, "entry") for t in turns])


def _entries(data_dir: Path) -> int:
    return len(fix_store(data_dir).read(OWNER, PROJECT).entries)


def test_injected_enospc_keeps_the_store_intact_and_the_events_until_space_returns(
    redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    settings = Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), **FAST})
    full = tmp_path / "disk-full"
    fault = {"RELIABILITY_FAULT": "enospc", "RELIABILITY_FAULT_DIR": str(tmp_path)}
    with fleet(redis_url, data_dir, tmp_path / "logs", workers=0, consumers=0, settings=FAST) as running:
        running.add("worker", "w0", wrapper=["-m", "tests.reliability.faults"], env=fault)
        _publish(redis_client, 0, 10)
        Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
        # Done, not only on disk: the log line shows before the job writes the index and commits, and a
        # disk that fills in between fails that first job too (2 batches waiting instead of 1).
        wait_for(
            lambda: _entries(data_dir) == 10 and not redis_client.keys("fixmem:batch:*"),
            60,
            "the first batch",
        )
        before = _digest(data_dir)

        full.touch()  # the disk is full from now on
        _publish(redis_client, 10, 10)
        Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
        wait_for(lambda: "no space left on device" in running.log_text("w0"), 60, "the worker to hit ENOSPC")
        wait_for(
            lambda: redis_client.zcard("rq:scheduled:fixmem-live") == 1, 30, "the job to wait for a retry"
        )
        assert _digest(data_dir) == before  # not a byte changed: no torn line, no half rotation
        assert len(redis_client.keys("fixmem:batch:*")) == 1  # the events wait in Redis
        assert read_counters(redis_client).events["recorded"] == 10  # nothing counted as done
        said = [line for line in running.log_text("w0").splitlines() if "no space left on device" in line]

        full.unlink()  # space returns
        took = wait_for(lambda: _entries(data_dir) == 20, 60, "the entries once space returned")
        wait_for(lambda: redis_client.keys("fixmem:batch:*") == [], 30, "the batch to be done")
    counters = read_counters(redis_client)
    assert counters.events["recorded"] == 20 and counters.events["duplicate"] == 0
    result = fix_store(data_dir).read(OWNER, PROJECT)
    assert result.malformed == [] and not result.incomplete_tail
    print(f"\ninjected ENOSPC: log unchanged while full; worker said: {said[0][:300]}\n"
          f"all 20 entries recorded once, {took:.1f}s after space returned")  # fmt: skip


@contextlib.contextmanager
def tiny_disk(where: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only); unmounted at the end."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip() or 'not root'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte with a filler file; returns it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for chunk in (1 << 16, 1 << 10, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * chunk)
    finally:
        os.close(fd)
    return filler


class Harness(threading.Thread):
    """Publishes turns one by one, retrying each until Redis takes it; counts Redis's refusals."""

    def __init__(self, url: str, first: int, count: int) -> None:
        super().__init__(daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=5)
        self.turns = [
            turn(i, owner=OWNER, project=PROJECT, event_id=f"ev-full-{i}")
            for i in range(first, first + count)
        ]
        self.refusals: list[str] = []

    def run(self) -> None:
        for event in self.turns:
            while True:
                try:
                    self.client.xadd("fixmem:turns", {"event": orjson.dumps(event)})
                    break
                except redis.exceptions.ResponseError as exc:
                    self.refusals.append(str(exc))
                    time.sleep(0.2)


@pytest.mark.chaos
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_real_full_disk_under_the_store_and_redis(tmp_path: Path) -> None:
    with tiny_disk(tmp_path / "disk") as disk:
        data_dir = disk / "data"
        server = EmbeddedRedis(data_dir=data_dir / "redis", appendonly=True)  # as `fixmem up` lays it out
        url = server.start()
        client = redis.Redis.from_url(url, socket_timeout=5)
        try:
            with fleet(url, data_dir, tmp_path / "logs", workers=1, consumers=1, settings=FAST) as running:
                _publish(client, 0, 10)
                wait_for(lambda: (running.check(), _entries(data_dir) == 10)[1], 60, "the first entries")
                before = _digest(data_dir)
                filler = fill(disk)
                harness = Harness(url, 10, 10)
                harness.start()
                wait_for(lambda: harness.refusals, 30, "Redis to refuse writes")
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:  # full for 5 s; `running.check` restarts the fallen
                    running.check()
                    assert _digest(data_dir) == before  # the store is intact while full
                    time.sleep(0.2)
                filler.unlink()  # space returns
                took = wait_for(lambda: (running.check(), _entries(data_dir) == 20)[1], 120, "every entry")
                harness.join(30)
                logs = {n: running.log_text(n) for n in running.members}
                crashes = running.crashes()
            result = fix_store(data_dir).read(OWNER, PROJECT)
            assert result.malformed == [] and not result.incomplete_tail and len(result.entries) == 20
            assert int(client.hget("fixmem:metrics:events", "recorded") or 0) == 20
        finally:
            client.close()
            server.stop()
    said = sorted({r.split(":")[0] for r in harness.refusals})
    print(
        f"\ntmpfs full under the store and Redis's AOF: Redis refused {len(harness.refusals)} writes "
        f"({said}); "
        f"store unchanged while full; all 20 entries recorded once, {took:.1f}s after space returned; "
        f"processes that exited on their own: {crashes or 'none'}"
    )
    assert crashes == {}, f"{crashes}: {logs['c0'][-600:]} {logs['w0'][-600:]}"
