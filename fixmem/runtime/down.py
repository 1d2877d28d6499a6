"""``fixmem down``: stop the ``fixmem up`` of a data directory, and whatever Redis of it survives.

The ``up`` is found by the lock it holds (``fixmem.runtime.state``): SIGTERM (it stops its children,
then its embedded Redis, as on Ctrl-C), SIGKILL when it has not exited within ``timeout``. Then the
embedded redis-server recorded in the data directory is shut down if it still runs (an ``up`` killed
with ``-9`` leaves it behind), so no redis-server of that data directory outlives ``down``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TextIO

from fixmem.runtime import state


def _up_pid(data_dir: Path, timeout: float = 5.0) -> int | None:
    """The running ``up``'s pid (waiting for one that has just taken its lock to write it)."""
    deadline = time.monotonic() + timeout
    while (pid := state.running_up(data_dir)) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid


def _wait_released(data_dir: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while state.running_up(data_dir) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def stop_up(data_dir: Path, out: TextIO, timeout: float = 60.0) -> bool:
    """Stop what runs for ``data_dir``; False when nothing did. Raises RuntimeError when a process does
    not exit even after SIGKILL, or the Redis found there is not the one ``up`` recorded."""
    pid = _up_pid(data_dir)
    if pid:
        out.write(f"down       stopping `fixmem up` pid {pid} of {data_dir} (SIGTERM)\n")
        out.flush()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not _wait_released(data_dir, timeout):
            out.write(f"down       pid {pid} did not stop within {timeout:.0f} s: SIGKILL\n")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if not _wait_released(data_dir, 10.0):
                raise RuntimeError(f"`fixmem up` pid {pid} does not exit")
        state.wait_gone(pid, 10.0)
        out.write(f"down       `fixmem up` pid {pid} stopped\n")
    orphan = state.stop_orphan(data_dir / "redis")
    if orphan is not None:
        out.write(f"down       shut down redis-server pid {orphan.pid} (port {orphan.port}, AOF flushed)\n")
    return bool(pid) or orphan is not None
