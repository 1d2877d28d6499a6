"""The backfill options tests run with: the default stream, group and queue, no rate limit, one process."""

from __future__ import annotations

import dataclasses

from ingest import keys
from ingest.backfill.config import RunConfig


def config(owner: str = "tester", **overrides: object) -> RunConfig:
    """A ``RunConfig`` for ``owner`` (the tests' limits), with ``overrides``."""
    base = RunConfig(
        owner=owner,
        stream=keys.DEFAULT_BACKFILL_STREAM,
        group=keys.DEFAULT_GROUP,
        queue=keys.DEFAULT_BACKFILL_QUEUE,
        rate=0.0,
        max_backlog=50,
        max_queued_jobs=20,
        parse_processes=1,
    )
    return dataclasses.replace(base, **overrides)  # type: ignore[arg-type]
