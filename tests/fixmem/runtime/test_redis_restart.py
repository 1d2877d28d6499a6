"""Restart the embedded Redis (AOF on) under a running consumer and worker: they reconnect, lose nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import redis

from fixmem.runtime.redis_server import EmbeddedRedis, free_port
from ingest.publish import publish_many
from tests.configs import fix_store
from tests.ingest.turns import turn
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[3]
PROJECT = "github.com/acme/widgets"


def _entries(data_dir: Path) -> int:
    return len(fix_store(data_dir).read("alice", PROJECT).entries)


def _noticed(tmp_path: Path) -> bool:
    """Both processes logged that Redis is gone (and are backing off), the ingest one and a worker."""
    ingest_log = (tmp_path / "ingest.log").read_text()
    worker_log = (tmp_path / "worker.log").read_text()
    worker_noticed = "could not connect to Redis" in worker_log or "redis unreachable" in worker_log
    return "redis unreachable at redis://127.0.0.1" in ingest_log and worker_noticed


def test_consumer_and_worker_ride_out_a_redis_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    server = EmbeddedRedis(data_dir=tmp_path / "redis", port=port, appendonly=True)
    url = server.start()
    env = {
        **os.environ,
        "FIXMEM_REDIS_URL": url,
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_READ_BLOCK_MS": "100",
    }
    logs = {name: (tmp_path / f"{name}.log").open("w") for name in ("ingest", "worker")}
    procs = [
        subprocess.Popen([sys.executable, "-m", "fixmem", name], cwd=ROOT, env=env, stderr=logs[name])
        for name in ("ingest", "worker")
    ]
    try:
        client = redis.Redis.from_url(url)
        publish_many(client, [turn(i) for i in range(100)])
        wait_for(lambda: _entries(data_dir) == 100, 120, "first 100 entries")
        server.stop()  # a clean SHUTDOWN: the AOF is flushed
        wait_for(lambda: _noticed(tmp_path), 60, "the consumer and the worker to notice Redis is gone")
        server = EmbeddedRedis(data_dir=tmp_path / "redis", port=port, appendonly=True)
        server.start()
        client = redis.Redis.from_url(url)
        publish_many(client, [turn(i) for i in range(100, 200)])
        wait_for(lambda: _entries(data_dir) == 200, 120, "all 200 entries after the restart")
        assert client.xpending("fixmem:turns", "fixmem")["pending"] == 0
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(60)
        for log in logs.values():
            log.close()
        server.stop()
    ingest_log = (tmp_path / "ingest.log").read_text()
    worker_log = (tmp_path / "worker.log").read_text()
    assert "redis unreachable at redis://127.0.0.1" in ingest_log
    assert "redis is back" in ingest_log
    assert "could not connect to Redis" in worker_log or "redis unreachable" in worker_log
