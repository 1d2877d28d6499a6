"""Library configurations for tests, built as ``fixmem.wiring`` builds them from the defaults of
``Settings``: tests override what they are about and never copy a default."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import redis

from fixmem import wiring
from fixmem.settings import Settings
from ingest.consumer import ConsumerConfig
from store import FixStore
from workers.jobs import WorkerContext
from workers.worker import WorkerOptions

DEFAULTS = Settings()


def fix_store(data_dir: str | os.PathLike[str], **overrides: Any) -> FixStore:
    """A store under ``data_dir`` with the default settings' rotation cap, with ``overrides``."""
    return FixStore(data_dir, **{"cap": DEFAULTS.rotation_cap, **overrides})


def consumer_config(**overrides: Any) -> ConsumerConfig:
    """The consumer's configuration of the default settings (consumer ``c1``), with ``overrides``."""
    return dataclasses.replace(wiring.consumer_config(DEFAULTS, name="c1"), **overrides)


def worker_options(**overrides: Any) -> WorkerOptions:
    """The worker's configuration of the default settings (live then backfill queue), with ``overrides``."""
    return dataclasses.replace(wiring.worker_options(DEFAULTS), **overrides)


def worker_context(client: redis.Redis, store: FixStore, **overrides: Any) -> WorkerContext:
    """The jobs' context of the default settings on ``client`` and ``store``, with ``overrides``."""
    return dataclasses.replace(wiring.worker_context(DEFAULTS, client, store=store), **overrides)
