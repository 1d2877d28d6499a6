"""Fixtures shared by the CLI tests."""

from __future__ import annotations

from typing import Any

import pytest
import redis


@pytest.fixture
def redis_reports_6_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every client's ``INFO server`` says ``redis_version: 6.0.16`` (the rest is the real server's)."""
    real_info = redis.Redis.info

    def old_server(self: redis.Redis, section: str | None = None, *args: object, **kwargs: object) -> Any:
        found = real_info(self, section, *args, **kwargs)  # type: ignore[call-overload]
        return {**found, "redis_version": "6.0.16"} if section == "server" else found

    monkeypatch.setattr(redis.Redis, "info", old_server)
