"""RQ's work loop installs SIGINT/SIGTERM handlers; tests that run it give pytest its own back."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def handlers_kept() -> Iterator[None]:
    """Restore the SIGINT and SIGTERM handlers as they were when the block began."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
