"""``python -m tests.reliability.faults worker …``: the shipped worker with one fault planted in the store.

The fault is chosen by ``RELIABILITY_FAULT`` and signalled through files in ``RELIABILITY_FAULT_DIR``:

- ``pause-mid-temp``: a log rewrite (rotation) has written half of its temp file; pause (to be killed).
- ``pause-before-replace``: the temp file is complete and fsynced, not yet renamed over the log; pause.
- ``pause-after-replace``: the new log is in place, its directory not fsynced, the index not written; pause.
- ``enospc``: every write to the data directory fails with ENOSPC while ``<dir>/disk-full`` exists.

A pause writes ``<dir>/paused`` (with the pid) and sleeps until the test SIGKILLs the process. Only the
first rewrite pauses, so a restarted worker (started without the fault) finishes the job.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from pathlib import Path
from typing import Any

from fixmem.cli.children import child
from fixmem.errors import run_group

FAULT = os.environ.get("RELIABILITY_FAULT", "")
FAULT_DIR = Path(os.environ.get("RELIABILITY_FAULT_DIR", "."))
DATA_DIR = os.path.realpath(os.environ.get("FIXMEM_DATA_DIR", "/nonexistent"))


def _pause(point: str) -> None:
    (FAULT_DIR / "paused").write_text(f"{os.getpid()} {point}\n")
    while True:
        time.sleep(60)


def _is_log(path: object) -> bool:
    return str(path).endswith(".jsonl") and not str(path).endswith(".quarantine.jsonl")


def _plant_pauses() -> None:
    import store.persist.fsio as fsio  # noqa: PLC0415 - patched before the worker imports it

    real_replace = os.replace
    real_write_all = fsio._write_all

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if _is_log(dst) and FAULT == "pause-before-replace":
            _pause(FAULT)
        real_replace(src, dst, *args, **kwargs)
        if _is_log(dst) and FAULT == "pause-after-replace":
            _pause(FAULT)

    def write_all(fd: int, data: bytes) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if FAULT == "pause-mid-temp" and target.endswith(".tmp") and ".jsonl." in target:
            real_write_all(fd, data[: len(data) // 2])
            os.fsync(fd)
            _pause(FAULT)
        real_write_all(fd, data)

    fsio.os.replace = replace  # type: ignore[attr-defined]
    fsio._write_all = write_all


def _plant_enospc() -> None:
    real_write = os.write
    full = FAULT_DIR / "disk-full"

    def write(fd: int, data: Any) -> int:
        if full.exists():
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                target = ""
            if target.startswith(DATA_DIR):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    os.write = write


if __name__ == "__main__":
    if FAULT.startswith("pause-"):
        _plant_pauses()
    elif FAULT == "enospc":
        _plant_enospc()
    elif FAULT:
        sys.exit(f"unknown RELIABILITY_FAULT {FAULT!r}")
    sys.exit(run_group(child))
