"""What ``fixmem up`` keeps in its data directory between runs, and how it finds what a dead one left.

- ``up.lock``: held with ``flock`` by the running ``up`` and naming its pid (JSON). The kernel drops the
  lock when that process dies, even by ``kill -9``: a held lock is a live ``up``, a free one with a pid
  in it is an ``up`` that died (a clean exit empties it). ``fixmem down`` reads the pid there.
- ``ports.json``: the embedded Redis's port and the API's, reused by the next ``up``.
- ``redis/server.json``: the embedded ``redis-server`` this ``up`` started: its pid, port and the
  ``run_id`` Redis itself made at start (``INFO server``). A server still running when no ``up`` holds the
  lock is an orphan; it is ours when that pid is a ``redis-server`` working in ``<data dir>/redis`` (its
  ``/proc`` exe and cwd) and, if it answers, with the recorded ``run_id``. ``stop_orphan`` shuts it down
  (its AOF flushed) so the next ``up`` starts its own on the same port: never two servers on one data
  directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from fixmem.runtime.redis_server import EmbeddedRedis, one_shot_client

LOCK_FILE = "up.lock"
PORTS_FILE = "ports.json"
SERVER_FILE = "server.json"  # under the embedded server's own directory, <data dir>/redis


class UpRunning(RuntimeError):
    """Raised when another ``fixmem up`` holds the data directory's lock."""

    def __init__(self, pid: int | None) -> None:
        super().__init__(f"pid {pid}" if pid else "pid unknown")
        self.pid = pid


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write_json(path: Path, value: dict[str, Any]) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp.write_text(json.dumps(value) + "\n", encoding="utf-8")
    os.replace(temp, path)


class UpLock:
    """The data directory's ``up.lock``, held for as long as this ``up`` runs."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None
        self.died: int | None = None  # the pid of an ``up`` that held it last and did not exit cleanly

    def acquire(self) -> None:
        """Take the lock and write our pid; raises UpRunning when a live ``up`` holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UpRunning(_read_json(self.path).get("pid")) from None
        self.died = _read_json(self.path).get("pid")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "started": time.time()}).encode() + b"\n", 0)
        self._fd = fd

    def release(self) -> None:
        """Empty the file (a clean exit) and drop the lock."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None


def running_up(data_dir: Path) -> int | None:
    """The pid of the ``up`` holding ``data_dir``'s lock, or None when none does (0: one that has not
    written its pid yet)."""
    path = data_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return int(_read_json(path).get("pid") or 0)
    finally:
        os.close(fd)  # a lock we took is dropped with it
    return None


def saved_ports(data_dir: Path) -> dict[str, int]:
    """The ports the last ``up`` of ``data_dir`` used: ``{"redis": …, "api": …}`` (either may be absent)."""
    return {
        k: v for k, v in _read_json(data_dir / PORTS_FILE).items() if isinstance(v, int) and 0 < v < 65536
    }


def save_port(data_dir: Path, name: str, port: int) -> None:
    """Remember ``port`` as the one of ``name`` (``redis``, ``api``) for the next ``up``."""
    _write_json(data_dir / PORTS_FILE, {**saved_ports(data_dir), name: port})


@dataclass(frozen=True)
class ServerRecord:
    """The embedded redis-server an ``up`` started."""

    pid: int
    port: int
    run_id: str


def record_server(server: EmbeddedRedis) -> ServerRecord:
    """Write ``server``'s pid, port and Redis ``run_id`` to ``<its dir>/server.json``; returns them."""
    client = one_shot_client(server.port, 5.0)
    try:
        info = client.info("server")
    finally:
        client.close()
    record = ServerRecord(int(info["process_id"]), server.port, str(info["run_id"]))
    _write_json(server.data_dir / SERVER_FILE, record.__dict__)
    return record


def forget_server(redis_dir: Path) -> None:
    """Drop the record (the server was stopped cleanly)."""
    with contextlib.suppress(OSError):
        (redis_dir / SERVER_FILE).unlink()


def _serves(pid: int, redis_dir: Path) -> bool:
    """Whether process ``pid`` is a redis-server working in ``redis_dir``: Redis rewrites its command line
    (``redis-server 127.0.0.1:PORT``) but changes into its ``--dir`` at start, so its ``/proc`` cwd says."""
    try:
        exe = Path(os.readlink(f"/proc/{pid}/exe"))
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    return exe.name == "redis-server" and cwd == redis_dir.resolve()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie has exited


def _answering_run_id(port: int) -> str | None:
    client = one_shot_client(port, 1.0)
    try:
        return str(client.info("server")["run_id"])
    except (redis.RedisError, OSError, KeyError):
        return None
    finally:
        client.close()


def stop_orphan(redis_dir: Path, timeout: float = 30.0) -> ServerRecord | None:
    """Stop the redis-server recorded in ``redis_dir`` if it still runs and is ours (see the module's
    docstring); returns its record, or None when nothing was left. Call it only when no ``up`` holds the
    lock. Raises RuntimeError when one runs there that is not the recorded one, or does not exit."""
    raw = _read_json(redis_dir / SERVER_FILE)
    try:
        record = ServerRecord(int(raw["pid"]), int(raw["port"]), str(raw["run_id"]))
    except (KeyError, TypeError, ValueError):
        forget_server(redis_dir)
        return None
    if not _alive(record.pid) or not _serves(record.pid, redis_dir):
        forget_server(redis_dir)  # gone, or the pid is another process's now
        return None
    answered = _answering_run_id(record.port)
    if answered is not None and answered != record.run_id:
        raise RuntimeError(
            f"a redis-server (pid {record.pid}) runs with {redis_dir} but is not the one `fixmem up` "
            f"recorded (run id {answered}, not {record.run_id}): stop it yourself"
        )
    if answered is not None:  # SHUTDOWN flushes the AOF
        client = one_shot_client(record.port, 5.0)
        with contextlib.suppress(redis.RedisError, OSError):
            client.shutdown(nosave=True)
        client.close()
    else:
        with contextlib.suppress(OSError):
            os.kill(record.pid, signal.SIGTERM)  # redis-server shuts down cleanly on SIGTERM too
    if not wait_gone(record.pid, timeout):
        with contextlib.suppress(OSError):
            os.kill(record.pid, signal.SIGKILL)
        if not wait_gone(record.pid, timeout):
            raise RuntimeError(f"the orphaned redis-server (pid {record.pid}) does not exit")
    forget_server(redis_dir)
    return record


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait until process ``pid`` has exited; False when it still runs after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
