"""Backfill options for tests, built as ``fixmem backfill`` builds them from the defaults of ``Settings``.

Tests run without a rate limit and parse in-process unless they are about those; they never copy a default.
"""

from __future__ import annotations

import dataclasses

from fixmem.cli.backfill import run_config
from fixmem.settings import Settings
from ingest.backfill.config import RunConfig

DEFAULTS = Settings()


def config(owner: str = "tester", **overrides: object) -> RunConfig:
    """The options of ``fixmem backfill`` for ``owner`` (no rate limit, one process), with ``overrides``."""
    base = dataclasses.replace(run_config(DEFAULTS, owner=owner), rate=0.0, parse_processes=1)
    return dataclasses.replace(base, **overrides)  # type: ignore[arg-type]
