"""A pipeline fleet the reliability tests can hurt: consumer and worker processes, killed and restarted.

Each process is the shipped command (``python -m fixmem.cli.children ingest|worker``) with its stderr in a
log file; the test decides who dies and when. ``FAST`` timings shorten the lease, reaper and reclaim clocks
for the normal suite; the chaos runs use the shipped defaults (``SHIPPED``) so they prove the promise as sold.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import redis

from ingest import keys
from tests.polling import wait_for

__all__ = ["wait_for"]  # re-exported: the reliability tests import it from here

ROOT = Path(__file__).resolve().parents[2]

# Shorter clocks for the normal suite: a dead worker's job is back after ~3-4 s, a dead consumer's
# entries after ~2-3 s. The shipped defaults are lease 15 s, reaper every 5 s, reclaim after 20 s idle.
FAST: Mapping[str, str] = {
    "FIXMEM_JOB_LEASE_SECONDS": "3",
    "FIXMEM_HEARTBEAT_SECONDS": "1",
    "FIXMEM_REAP_INTERVAL_SECONDS": "1",
    "FIXMEM_STUCK_SECONDS": "2",
    "FIXMEM_CLAIM_IDLE_SECONDS": "2",
    "FIXMEM_CLAIM_INTERVAL_SECONDS": "1",
    "FIXMEM_READ_BLOCK_MS": "100",
    "FIXMEM_LOCK_LEASE_SECONDS": "3",
}
SHIPPED: Mapping[str, str] = {}


@dataclass
class Member:
    """One process of the fleet: its role (``ingest`` / ``worker``), name, and every pid it ran as."""

    name: str
    role: str
    process: subprocess.Popen[bytes] | None = None
    pids: list[int] = field(default_factory=list)
    kills: int = 0
    wrapper: list[str] | None = None  # run under this module instead of fixmem.cli.children (fault injection)
    env: Mapping[str, str] = field(default_factory=dict)  # on top of the fleet's environment
    unexpected_exits: list[int] = field(default_factory=list)


@dataclass
class Fleet:
    """Consumers and workers on one Redis and one data directory; logs under ``log_dir``."""

    redis_url: str
    data_dir: Path
    log_dir: Path
    settings: Mapping[str, str] = field(default_factory=dict)  # extra FIXMEM_* variables
    members: dict[str, Member] = field(default_factory=dict)
    wrapper: list[str] | None = None  # default for workers: run under this module (fault injection)

    def env(self) -> dict[str, str]:
        """The environment of every member."""
        return {
            **os.environ,
            "FIXMEM_REDIS_URL": self.redis_url,
            "FIXMEM_DATA_DIR": str(self.data_dir),
            "PYTHONPATH": str(ROOT),
            **self.settings,
        }

    def add(
        self, role: str, name: str, *, wrapper: list[str] | None = None, env: Mapping[str, str] | None = None
    ) -> Member:
        """Start a member (``role`` ``ingest`` or ``worker``) named ``name``, optionally under ``wrapper``."""
        wrapper = wrapper or (self.wrapper if role == "worker" else None)
        member = Member(name, role, wrapper=wrapper, env=dict(env or {}))
        self.members[name] = member
        self._spawn(member)
        return member

    def _spawn(self, member: Member) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        module = member.wrapper or ["-m", "fixmem.cli.children"]
        argv = [sys.executable, *module, member.role]
        if member.role == "ingest":  # a consumer's name is stable; a worker's is unique per process (RQ)
            argv += ["--name", member.name]
        with (self.log_dir / f"{member.name}.log").open("ab") as log:
            member.process = subprocess.Popen(
                argv, cwd=ROOT, env={**self.env(), **member.env}, stdout=log, stderr=subprocess.STDOUT
            )
        member.pids.append(member.process.pid)

    def check(self) -> None:
        """Record members that exited without being told to (a crash) and start them again."""
        for member in self.members.values():
            proc = member.process
            if proc is not None and proc.poll() is not None:
                member.unexpected_exits.append(proc.returncode)
                self._spawn(member)

    def kill(self, name: str) -> None:
        """SIGKILL ``name`` (it gets no chance to clean up) and wait for it to be gone."""
        member = self.members[name]
        proc = member.process
        assert proc is not None
        self.check()
        proc = member.process
        assert proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        member.kills += 1
        member.process = None

    def restart(self, name: str) -> None:
        """Start ``name`` again after a kill (same name: a consumer takes back its own pending entries)."""
        member = self.members[name]
        assert member.process is None, f"{name} is still running"
        self._spawn(member)

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM everyone (a worker finishes its job, a consumer its cycle), SIGKILL after ``grace``."""
        running = [m.process for m in self.members.values() if m.process is not None]
        for proc in running:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in running:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for member in self.members.values():
            member.process = None

    def ready(self, client: redis.Redis, timeout: float = 60.0) -> None:
        """Wait until every worker is registered with RQ and the consumer group exists."""
        workers = sum(m.role == "worker" for m in self.members.values())

        def up() -> bool:
            self.check()
            try:
                groups = client.xinfo_groups(keys.DEFAULT_STREAM)
            except redis.exceptions.ResponseError:
                return False
            return bool(groups) and int(client.scard("rq:workers")) >= workers

        wait_for(up, timeout, "the fleet to start")

    def crashes(self) -> dict[str, list[int]]:
        """Members that exited on their own, with their exit statuses."""
        self.check()
        return {n: m.unexpected_exits for n, m in self.members.items() if m.unexpected_exits}

    def log_text(self, name: str | None = None) -> str:
        """One member's log, or every member's (for assertions on what they said)."""
        names = [name] if name else list(self.members)
        return "\n".join(
            (self.log_dir / f"{n}.log").read_text(errors="replace")
            for n in names
            if (self.log_dir / f"{n}.log").exists()
        )


@contextlib.contextmanager
def fleet(
    redis_url: str,
    data_dir: Path,
    log_dir: Path,
    *,
    workers: int = 2,
    consumers: int = 1,
    settings: Mapping[str, str] = FAST,
    wrapper: list[str] | None = None,
) -> Iterator[Fleet]:
    """A running fleet (``consumers`` consumers ``c0``…, ``workers`` workers ``w0``…), stopped at the end."""
    running = Fleet(redis_url, data_dir, log_dir, settings=dict(settings), wrapper=wrapper)
    try:
        for i in range(consumers):
            running.add("ingest", f"c{i}")
        for i in range(workers):
            running.add("worker", f"w{i}")
        yield running
    finally:
        running.stop()
