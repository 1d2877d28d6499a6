"""What the HTTP process's two faces share: the context its routes and pages use (``ApiContext``) and
library failures as HTTP errors (``store_errors``).

The API's routes (``fixmem.api.app``) and the web UI's pages (``fixmem.ui``) both read this module; the
UI imports nothing else of ``fixmem.api`` but the tokens (``fixmem.api.auth``), so the two do not
import each other (an import-linter contract keeps it so). ``fixmem.api.server`` builds the context and
serves both.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import redis
from fastapi import HTTPException

from fixmem.api.auth import Tokens
from fixmem.errors import classify
from fixmem.runtime.metrics import ApiMetrics
from fixmem.settings import Settings
from store import FixStore

log = logging.getLogger("fixmem.api")


@dataclass(frozen=True)
class ApiContext:
    """What the routes use: settings, the store, the tokens, the metrics, a Redis client (readyz)."""

    settings: Settings
    store: FixStore
    tokens: Tokens
    metrics: ApiMetrics
    client: redis.Redis | None
    clock: Callable[[], float] = field(default=time.time)


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Library failures as HTTP errors, by ``fixmem.errors.classify`` (the one table); the details go to
    the log, not to the caller, unless the input was theirs."""
    try:
        yield
    except HTTPException:
        raise
    except Exception as exc:
        failure = classify(exc)
        if failure is None:
            raise
        if failure.http_status >= 500:
            log.error("request failed: %s", failure.message)
        raise HTTPException(failure.http_status, failure.public) from exc
