"""Stopping the embedded Redis sends SHUTDOWN once and does not retry it: redis-py's default client
retried the dropped connection 3 times with backoff, and ``fixmem up`` waited ~4 s after Redis had exited."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.connection

from fixmem.runtime.redis_server import EmbeddedRedis, EmbeddedRedisError


def test_stop_connects_once_and_the_server_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed on the old code: 4 connection attempts (SHUTDOWN, then 3 retries against a dead port)."""
    server = EmbeddedRedis(tmp_path / "redis")
    server.start()
    process = server.process
    assert process is not None
    connects: list[int] = []
    real = redis.connection.Connection._connect

    def counted(self: redis.connection.Connection) -> object:
        connects.append(server.port)
        return real(self)

    monkeypatch.setattr(redis.connection.Connection, "_connect", counted)  # each socket connect
    server.stop()
    assert connects == [server.port]
    assert process.returncode == 0 and not server.alive()
    assert "ready to exit" in (tmp_path / "redis" / "redis.log").read_text()


def test_start_on_a_port_another_redis_holds_is_not_fooled_by_its_answer(tmp_path: Path) -> None:
    """Two ``fixmem up``s starting together can pick the same free port: the one whose redis-server
    loses the bind must not take the other's answer as its own readiness (it did with a PING)."""
    with EmbeddedRedis(tmp_path / "theirs", appendonly=False) as theirs:
        ours = EmbeddedRedis(tmp_path / "ours", port=theirs.port, appendonly=False)
        try:
            url = ours.start()
            assert ours.port != theirs.port and url == f"redis://127.0.0.1:{ours.port}/0"
            assert ours.process is not None and ours.alive()
        finally:
            ours.stop()
        with pytest.raises(EmbeddedRedisError):
            EmbeddedRedis(tmp_path / "kept", port=theirs.port, appendonly=False).start(keep_port=True)
