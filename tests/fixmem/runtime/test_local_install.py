"""A stable local install, with real processes: ``fixmem up`` twice keeps its token, ``REDIS_URL`` and
API port; ``fixmem token new|revoke`` reach the running API; ``kill -9`` of ``up`` leaves its Redis,
which the next ``up`` shuts down before starting its own on the same port (exactly one redis-server for
the data directory); ``fixmem down`` stops everything. Failed on the old code: new tokens and a new
Redis port at every ``up``, a second Redis beside the orphan, and no ``down``."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from fixmem.identity import hook_spool_dir
from fixmem.runtime.tokens import fingerprint
from ingest import keys
from ingest.spool import Spool
from tests.ingest.turns import turn, wire

ROOT = Path(__file__).resolve().parents[3]


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    return {**env, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_WORKERS": "0", "FIXMEM_OWNER": "alice"}


def _pump(stream: object, into: queue.Queue[str]) -> None:
    for raw in stream:  # type: ignore[attr-defined]
        into.put(raw)


def _up(data_dir: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Start ``fixmem up``; returns it and its ``export`` values once it printed ``running:``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fixmem", "up"],
        cwd=ROOT, env=_env(data_dir), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + 180
    while not any(line.startswith("running:") for line in seen):
        assert proc.poll() is None and time.monotonic() < deadline, "".join(seen)
        try:
            seen.append(lines.get(timeout=1))
        except queue.Empty:
            continue
    exports = next(line for line in seen if line.startswith("shell ")).split()[2:]
    return proc, dict(item.split("=", 1) for item in exports)


def _servers(data_dir: Path) -> set[int]:
    """The pids of the redis-servers working in ``data_dir``'s Redis directory (Redis chdirs there)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                exe, cwd = os.readlink(entry / "exe"), os.readlink(entry / "cwd")
            except OSError:
                continue
            if Path(exe).name == "redis-server" and Path(cwd) == (data_dir / "redis").resolve():
                found.add(int(entry.name))
    return found


def _fixmem(*argv: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fixmem", *argv, "--data-dir", str(data_dir)],
        cwd=ROOT, env=_env(data_dir), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _status(values: dict[str, str], token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.get(values["API"] + "/api/projects", headers=headers, timeout=10).status_code


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """The data directory; a redis-server of it that a failed test left behind is killed."""
    yield tmp_path / "data"
    for pid in _servers(tmp_path / "data"):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_up_keeps_token_redis_url_and_port_survives_kill_9_and_stops_with_down(data_dir: Path) -> None:
    up, first = _up(data_dir)
    try:
        # running: is printed once /readyz answers: no retry here
        assert httpx.get(first["API"] + "/readyz", timeout=10).status_code == 200
        assert _status(first, first["TOKEN"]) == 200
        minted = _fixmem("token", "new", "--owner", "bob", data_dir=data_dir)
        assert minted.returncode == 0, minted.stderr
        bob = minted.stdout.strip()
        assert _status(first, bob) == 200  # the running API re-read the file
        revoked = _fixmem("token", "revoke", fingerprint(bob)[:8], data_dir=data_dir)
        assert revoked.returncode == 0, revoked.stderr
        assert _status(first, bob) == 401
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(timeout=120)
    assert up.returncode == 0 and not _servers(data_dir)

    up, second = _up(data_dir)  # the next day: the same token, Redis URL and API
    assert second == first
    assert _status(second, first["TOKEN"]) == 200
    orphan = _servers(data_dir)
    assert len(orphan) == 1
    up.kill()  # kill -9: its redis-server stays behind (its own session, PPID 1)
    up.wait()
    assert _servers(data_dir) == orphan

    up, third = _up(data_dir)
    try:
        running = _servers(data_dir)
        assert len(running) == 1 and running != orphan  # the orphan was replaced, not joined
        assert third["REDIS_URL"] == first["REDIS_URL"] and third["TOKEN"] == first["TOKEN"]
        assert _status(third, first["TOKEN"]) == 200
        down = _fixmem("down", data_dir=data_dir)
        assert down.returncode == 0, down.stderr
        assert f"`fixmem up` pid {up.pid} stopped" in down.stdout
        assert up.wait(timeout=30) == 0
        assert not _servers(data_dir)
        again = _fixmem("down", data_dir=data_dir)
        assert again.returncode == 0 and "nothing runs with data dir" in again.stdout
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()


@pytest.mark.slow
def test_up_publishes_the_turns_a_stop_spooled_while_redis_was_down(data_dir: Path) -> None:
    """A Stop with Redis unreachable keeps the session's turns in the spool; ``up`` sends them."""
    spool = Spool(hook_spool_dir(data_dir))
    spool.put(keys.DEFAULT_STREAM, [wire(turn(1)), wire(turn(2))])
    up, values = _up(data_dir)
    try:
        client = redis.Redis.from_url(values["REDIS_URL"])
        assert client.xlen(keys.DEFAULT_STREAM) == 2  # published before `running:` (no worker runs)
        assert spool.pending() == []
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(timeout=120)
