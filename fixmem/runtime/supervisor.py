"""Supervise child processes: start them, restart a crashed one with backoff, stop them all in order.

``fixmem up`` runs the consumer, the workers and the HTTP API as children of one supervisor. A child
that exits while the supervisor is running is restarted after a delay that doubles with each quick crash
(``initial`` .. ``cap`` seconds) and resets once the child stayed up ``stable_after`` seconds. ``stop``
sends SIGTERM to every child (newest first), waits up to ``grace`` seconds for them to finish what they
hold (a worker ends its current job, the consumer its current cycle), then SIGKILLs what is left.
Nothing is lost either way: unfinished work stays in Redis and is taken up again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger("fixmem.supervisor")


@dataclass(frozen=True)
class ChildSpec:
    """A child to keep running: a name for logs, its argv, its environment (None: inherit), and the file
    descriptors it inherits (each start: e.g. the API's listening socket, which ``up`` keeps open)."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    pass_fds: tuple[int, ...] = ()


@dataclass
class Child:
    """A supervised child's state."""

    spec: ChildSpec
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    quick_crashes: int = 0
    restart_at: float | None = None
    exits: list[int] = field(default_factory=list)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


class Supervisor:
    """Keeps a set of children running until ``stop``."""

    def __init__(
        self,
        specs: Sequence[ChildSpec] = (),
        *,
        initial: float = 0.5,
        cap: float = 30.0,
        stable_after: float = 30.0,
        grace: float = 15.0,
    ) -> None:
        self.children = [Child(spec) for spec in specs]
        self.initial = initial
        self.cap = cap
        self.stable_after = stable_after
        self.grace = grace
        self.stopping = threading.Event()

    def add(self, spec: ChildSpec) -> Child:
        """Add a child (started by the next ``start`` or ``poll``)."""
        child = Child(spec, restart_at=0.0)
        self.children.append(child)
        return child

    def start(self) -> None:
        """Start every child that is not running."""
        for child in self.children:
            if child.process is None:
                self._spawn(child)

    def _spawn(self, child: Child) -> None:
        env = None if child.spec.env is None else dict(child.spec.env)
        child.process = subprocess.Popen(list(child.spec.argv), env=env, pass_fds=child.spec.pass_fds)
        child.started_at = time.monotonic()
        child.restart_at = None
        log.info("started %s (pid %d)", child.spec.name, child.process.pid)

    def poll(self) -> None:
        """Notice exited children and restart them when their backoff has elapsed."""
        now = time.monotonic()
        for child in self.children:
            if self.stopping.is_set():
                return
            proc = child.process
            if proc is not None and proc.poll() is not None:
                code = proc.returncode
                child.exits.append(code)
                child.process = None
                ran = now - child.started_at
                child.quick_crashes = 0 if ran >= self.stable_after else child.quick_crashes + 1
                delay = min(self.cap, self.initial * 2 ** max(0, child.quick_crashes - 1))
                child.restart_at = now + delay
                log.warning(
                    "%s (pid %d) exited with %s after %.1fs: restarting in %.1fs",
                    child.spec.name, proc.pid, _describe_exit(code), ran, delay,
                )  # fmt: skip
            if child.process is None and child.restart_at is not None and now >= child.restart_at:
                child.restarts += 1
                self._spawn(child)

    def run(self, stop: threading.Event, *, tick: float = 0.2) -> None:
        """Poll until ``stop`` is set, then stop the children."""
        self.start()
        while not stop.wait(tick):
            self.poll()
        self.stop()

    def stop(self) -> None:
        """SIGTERM the children newest first, wait up to ``grace`` seconds, then SIGKILL the rest."""
        self.stopping.set()
        running = [c for c in reversed(self.children) if c.process is not None and c.process.poll() is None]
        for child in running:
            assert child.process is not None
            log.info("stopping %s (pid %d)", child.spec.name, child.process.pid)
            _signal(child.process, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for child in running:
            assert child.process is not None
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in %.0fs: killing it", child.spec.name, self.grace)
                _signal(child.process, signal.SIGKILL)
                child.process.wait()


def _signal(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, sig)


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"
