"""One backfill's options (``RunConfig``): the caller gives every limit, fixmem builds them from settings."""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["RunConfig", "parse_processes"]


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One backfill's options. ``rate``: events/s (0: no limit); ``since``: unix seconds or None.

    The stream, group, queue and limits have no defaults here: ``fixmem.settings`` holds them.
    """

    owner: str
    stream: str
    group: str
    queue: str
    rate: float
    max_backlog: int  # of this run's events not yet read by the consumer
    max_queued_jobs: int  # backfill jobs waiting for a worker
    parse_processes: int  # files imported in parallel by this many processes (1: in this one)
    format: str = "auto"
    project: str | None = None
    since: float | None = None
    commit_events: int = 200  # events per script call (one round trip; Redis runs it atomically)
    commit_bytes: int = 1 << 20  # ... and bytes: a long script would stall live traffic
    pool_min_bytes: int = 32 << 20  # ... once there is this much to read (starting them costs ~1 s each)
    parse_nice: int = 0  # added to the parse processes' niceness: live work gets the CPU first
    checkpoint_ttl_seconds: int = 14 * 86400


def parse_processes(setting: int) -> int:
    """Processes that parse files: the setting, or (0) one per CPU this process may use, at most 4."""
    if setting:
        return setting
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
