"""Logging for long-running commands: one line per record on stderr, tagged with the process's role."""

from __future__ import annotations

import logging
import sys


def configure(role: str, *, verbose: bool = False) -> None:
    """Log INFO (DEBUG with ``verbose``) to stderr as ``time level role[pid] logger: message``.

    RQ's per-job INFO lines (four per job) are kept at WARNING unless ``verbose``.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter(
            f"%(asctime)s %(levelname)-7s {role}[%(process)d] %(name)s: %(message)s", datefmt="%H:%M:%S"
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("rq").setLevel(logging.INFO if verbose else logging.WARNING)
