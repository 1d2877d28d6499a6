"""The tokens and state ``fixmem up`` keeps in its data directory: ``fixmem token``, the lock, the ports,
the record of its embedded Redis and the orphan it recognises (real files, a real redis-server)."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fixmem.api.auth import WatchedTokens, load_tokens
from fixmem.cli import main
from fixmem.runtime import state
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.runtime.tokens import (
    TokenStoreError,
    ensure_tokens,
    fingerprint,
    list_tokens,
    new_token,
    revoke,
    tokens_path,
)
from fixmem.runtime.up import wait_ready
from fixmem.settings import Settings


def test_ensure_tokens_mints_once_and_keeps_them_in_a_0600_file(tmp_path: Path) -> None:
    first = ensure_tokens(tmp_path, "owner", ["alice", "demo"])
    assert ensure_tokens(tmp_path, "owner", ["alice", "demo"]) == first
    path = tokens_path(tmp_path, "owner")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    served = load_tokens(Settings.from_env({"FIXMEM_API_TOKENS_FILE": str(path)}))
    assert {served.owner(t) for t in first.values()} == {"alice", "demo"}
    assert ensure_tokens(tmp_path, "owner", ["bob"])["bob"] not in first.values()
    assert {row.name for row in list_tokens(tmp_path)} == {"alice", "demo", "bob"}


def test_token_new_list_revoke(tmp_path: Path) -> None:
    alice = ensure_tokens(tmp_path, "owner", ["alice"])["alice"]
    second = new_token(tmp_path, "owner", "alice")
    ops = new_token(tmp_path, "operator", "alice")
    rows = list_tokens(tmp_path)
    assert [(r.kind, r.name) for r in rows] == [("owner", "alice"), ("owner", "alice"), ("operator", "alice")]
    assert {r.fingerprint for r in rows} == {fingerprint(t) for t in (alice, second, ops)}
    with pytest.raises(TokenStoreError, match="at least 4"):
        revoke(tmp_path, prefix="abc")
    with pytest.raises(TokenStoreError, match="no token with fingerprint zzzz"):  # hex never has z
        revoke(tmp_path, prefix="zzzz")
    removed = revoke(tmp_path, prefix=fingerprint(second)[:6])
    assert [(r.kind, r.fingerprint) for r in removed] == [("owner", fingerprint(second))]
    assert [r.kind for r in revoke(tmp_path, name="alice", kind="operator")] == ["operator"]
    assert [fingerprint(alice)] == [r.fingerprint for r in list_tokens(tmp_path)]
    revoke(tmp_path, name="alice")
    assert list_tokens(tmp_path) == []
    with pytest.raises(TokenStoreError, match="no token with name alice"):
        revoke(tmp_path, name="alice")


def test_a_malformed_tokens_file_is_an_error_that_names_it(tmp_path: Path) -> None:
    tokens_path(tmp_path, "owner").write_text("no-colon-here\n")
    with pytest.raises(TokenStoreError, match="tokens entry 1: expected token:owner"):
        ensure_tokens(tmp_path, "owner", ["alice"])
    assert tokens_path(tmp_path, "owner").read_text() == "no-colon-here\n"  # nothing lost


def test_the_token_command_shows_a_token_only_when_it_mints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["--data-dir", str(tmp_path)]
    assert main(["token", "new", "--owner", "bob", *where]) == 0
    token = capsys.readouterr().out.strip()
    assert main(["token", "list", *where]) == 0
    listed = capsys.readouterr().out
    assert token not in listed and f"owner     {fingerprint(token)}  bob" in listed
    assert main(["token", "revoke", *where]) == 2  # neither a fingerprint nor --owner
    assert main(["token", "revoke", fingerprint(token)[:8], *where]) == 0
    assert f"revoked   owner     {fingerprint(token)}  bob" in capsys.readouterr().out
    assert main(["token", "revoke", "--owner", "bob", *where]) == 66
    assert "no token with name bob" in capsys.readouterr().err


def test_watched_tokens_follow_the_file_and_keep_the_last_good_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tokens_path(tmp_path, "owner")
    alice = ensure_tokens(tmp_path, "owner", ["alice"])["alice"]
    served = load_tokens(Settings.from_env({"FIXMEM_API_TOKENS_FILE": str(path)}))
    assert isinstance(served, WatchedTokens) and served.owner(alice) == "alice"
    bob = new_token(tmp_path, "owner", "bob")
    assert served.owner(bob) == "bob"  # no restart
    revoke(tmp_path, name="alice")
    assert served.owner(alice) is None
    path.write_text("broken\n")
    with caplog.at_level(logging.ERROR, "fixmem.api.auth"):
        assert served.owner(bob) == "bob"
    assert "tokens not re-read, the previous ones stay" in caplog.text


def test_the_lock_names_the_running_up_and_frees_when_it_dies(tmp_path: Path) -> None:
    lock = state.UpLock(tmp_path)
    lock.acquire()
    try:
        assert state.running_up(tmp_path) == os.getpid()
        with pytest.raises(state.UpRunning) as held:
            state.UpLock(tmp_path).acquire()
        assert held.value.pid == os.getpid()
    finally:
        lock.release()
    assert state.running_up(tmp_path) is None
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from fixmem.runtime.state "
         "import UpLock; UpLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(600)",
         str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    assert state.running_up(tmp_path) == holder.pid
    holder.kill()  # kill -9: the kernel drops the lock
    holder.wait()
    holder.stdout.close()
    assert state.running_up(tmp_path) is None
    again = state.UpLock(tmp_path)
    again.acquire()
    assert again.died == holder.pid  # the next up knows the last one died
    again.release()
    assert state.UpLock(tmp_path).died is None


def test_an_orphaned_embedded_redis_is_recognised_and_shut_down(tmp_path: Path) -> None:
    redis_dir = tmp_path / "redis"
    server = EmbeddedRedis(data_dir=redis_dir)
    server.start()
    try:
        record = state.record_server(server)
        assert record.port == server.port and server.process is not None
        assert record.pid == server.process.pid
        assert state.stop_orphan(tmp_path / "elsewhere") is None  # not that directory's
        assert server.alive()
        assert state.stop_orphan(redis_dir) == record
        server.process.wait(timeout=30)  # it exited on its own: SHUTDOWN
        assert not (redis_dir / state.SERVER_FILE).exists()
        assert state.stop_orphan(redis_dir) is None
    finally:
        server.stop()


def test_a_record_whose_pid_is_no_redis_of_ours_is_forgotten(tmp_path: Path) -> None:
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    (redis_dir / state.SERVER_FILE).write_text(f'{{"pid": {os.getpid()}, "port": 1, "run_id": "x"}}')
    assert state.stop_orphan(redis_dir) is None  # this python is alive, but it is no redis-server
    assert not (redis_dir / state.SERVER_FILE).exists()


def test_ports_are_saved_and_bad_files_ignored(tmp_path: Path) -> None:
    assert state.saved_ports(tmp_path) == {}
    state.save_port(tmp_path, "redis", 6390)
    state.save_port(tmp_path, "api", 8770)
    assert state.saved_ports(tmp_path) == {"redis": 6390, "api": 8770}
    (tmp_path / state.PORTS_FILE).write_text('{"redis": "x", "api": 99999}')
    assert state.saved_ports(tmp_path) == {}


def test_wait_ready_gives_up_at_its_deadline_or_on_stop(tmp_path: Path) -> None:
    assert wait_ready("http://127.0.0.1:9/readyz", 0.2, threading.Event()) is False
    stopped = threading.Event()
    stopped.set()
    assert wait_ready("http://127.0.0.1:9/readyz", 60, stopped) is False
