"""``fixmem up`` as a real subprocess, and the supervisor that keeps its children running."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from fixmem.errors import CliError, ExitCode
from fixmem.runtime.redis_server import parse_redis_version, version_supported
from fixmem.runtime.supervisor import ChildSpec, Supervisor
from fixmem.runtime.up import children, redis_for
from fixmem.settings import Settings
from ingest.connection import REDIS_DOWN, connect
from ingest.publish import publish_turn
from tests.configs import fix_store
from tests.ingest.turns import turn, wire
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[3]


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    return {**env, "FIXMEM_DATA_DIR": str(data_dir), **extra}


def _answers(url: str) -> bool:
    try:
        return bool(connect(url, timeout=0.5).ping())
    except REDIS_DOWN:
        return False


def test_up_demo_exit_runs_the_whole_pipeline_on_an_embedded_redis(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-m", "fixmem", "up", "--demo", "--exit"],
        cwd=ROOT, env=_env(data_dir), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "(embedded, data in" in out and "AOF everysec, noeviction" in out
    assert "demo: 3 entries in the fix log of demo/github.com/fixmem/demo-widgets" in out
    for outcome in ("fixed", "unverified", "partial"):
        assert f"  {outcome}" in out
    assert "Past fixes in this project:" in out and "csv_import.py" in out
    assert "redis      stopped (AOF flushed)" in out
    url = next(line.split()[1] for line in out.splitlines() if line.startswith("redis      redis://"))
    assert not _answers(url)  # the embedded server is gone
    assert not (data_dir / "redis" / "url").exists()
    assert list((data_dir / "redis").glob("appendonly*"))  # its data survived on disk
    again = subprocess.run(
        [sys.executable, "-m", "fixmem", "up", "--demo", "--exit", "--workers", "1"],
        cwd=ROOT, env=_env(data_dir), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "demo: 3 entries" in again.stdout  # the same three: the demo's ids are fixed


def test_up_with_a_configured_redis_uses_it_and_leaves_it_running(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    settings = Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(tmp_path)})
    out = io.StringIO()
    with redis_for(settings, out) as running:
        assert (running.url, running.server) == (redis_url, None)
    assert f"redis      {redis_url} (FIXMEM_REDIS_URL)" in out.getvalue()
    assert _answers(redis_url)  # a configured Redis is not ours to stop
    specs = children(settings, redis_url, 3)
    assert [c.name for c in specs] == ["ingest", "worker-0", "worker-1", "worker-2"]
    assert all(c.env is not None and c.env["FIXMEM_REDIS_URL"] == redis_url for c in specs)


def test_a_running_up_refuses_a_second_revives_its_redis_and_stops_on_sigterm(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = subprocess.Popen(
        [sys.executable, "-m", "fixmem", "up", "--workers", "1"],
        cwd=ROOT, env=_env(data_dir), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert first.stdout is not None
        for line in first.stdout:
            if line.startswith("running"):
                break
        url = (data_dir / "redis" / "url").read_text().strip()
        assert _answers(url)
        second = subprocess.run(
            [sys.executable, "-m", "fixmem", "up", "--workers", "0"],
            cwd=ROOT, env=_env(data_dir), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert second.returncode == 1
        assert "another `fixmem up` is running with this data directory" in second.stderr
        client = redis.Redis.from_url(url)
        os.kill(int(client.info("server")["process_id"]), signal.SIGKILL)  # the embedded Redis crashes
        wait_for(lambda: _answers(url), 60, "up to restart Redis on the same port")
        publish_turn(client, turn(1))
        wait_for(
            lambda: fix_store(data_dir).read("alice", "github.com/acme/widgets").entries,
            120,
            "the children to come back to the new Redis",
        )
    finally:
        first.send_signal(signal.SIGTERM)
        rest = first.communicate(timeout=120)[0]
    assert first.returncode == 0
    assert "children   stopped" in rest and "redis      stopped (AOF flushed)" in rest
    assert not _answers(url)
    assert not (data_dir / "redis" / "url").exists()


def test_the_supervisor_restarts_a_crashed_child_with_backoff() -> None:
    crashing = ChildSpec("crash", [sys.executable, "-c", "import sys; sys.exit(3)"])
    steady = ChildSpec("steady", [sys.executable, "-c", "import time; time.sleep(600)"])
    supervisor = Supervisor([steady, crashing], initial=0.1, cap=0.4, stable_after=60, grace=5)
    stop = threading.Event()
    thread = threading.Thread(target=supervisor.run, args=(stop,), kwargs={"tick": 0.02})
    thread.start()
    try:
        wait_for(lambda: supervisor.children[1].restarts >= 4, 30, "four restarts")
    finally:
        stop.set()
        thread.join(30)
    steady_child, crash_child = supervisor.children
    assert crash_child.restarts >= 4
    assert set(crash_child.exits) == {3}
    assert steady_child.restarts == 0
    assert steady_child.process is not None and steady_child.process.returncode == -signal.SIGTERM


def test_the_supervisor_kills_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    stubborn = ChildSpec(
        "stubborn",
        [sys.executable, "-c", "import pathlib, signal, sys, time; "
         "signal.signal(signal.SIGTERM, signal.SIG_IGN); pathlib.Path(sys.argv[1]).touch(); time.sleep(600)",
         str(ready)],
    )  # fmt: skip
    supervisor = Supervisor([stubborn], grace=0.5)
    supervisor.start()
    wait_for(ready.exists, 30, "the child to ignore SIGTERM")  # SIGTERM before that would simply end it
    started = time.monotonic()
    supervisor.stop()
    assert time.monotonic() - started < 10
    child = supervisor.children[0]
    assert child.process is not None and child.process.returncode == -signal.SIGKILL


def test_the_embedded_redis_is_configured_as_documented(tmp_path: Path) -> None:
    """AOF with fsync every second and no eviction: a full Redis refuses writes instead of dropping
    unprocessed events. Checked on the running server, not on the command line that started it."""
    settings = Settings.from_env({"FIXMEM_DATA_DIR": str(tmp_path)})
    with redis_for(settings, io.StringIO()) as running:
        assert running.server is not None
        client = redis.Redis.from_url(running.url, decode_responses=True)
        try:
            config = {
                name: client.config_get(name)[name]
                for name in ("appendonly", "appendfsync", "maxmemory-policy", "dir", "bind")
            }
        finally:
            client.close()
    assert config["appendonly"] == "yes" and config["appendfsync"] == "everysec"
    assert config["maxmemory-policy"] == "noeviction"
    assert Path(config["dir"]) == tmp_path / "redis" and config["bind"] == "127.0.0.1"


def test_up_prints_the_bundled_redis_cli_and_it_publishes(tmp_path: Path) -> None:
    """The README tells users to XADD by hand with redis-cli; ``up`` says where the bundled one is."""
    data_dir = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fixmem", "up", "--workers", "0"],
        cwd=ROOT, env=_env(data_dir, FIXMEM_API_PORT="0"), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("running"):
                break
        cli = next(line.split(None, 1)[1].strip() for line in lines if line.startswith("redis-cli "))
        assert Path(cli).name == "redis-cli" and os.access(cli, os.X_OK)
        url = (data_dir / "redis" / "url").read_text().strip()
        publish = next(line for line in lines if line.startswith("publish "))
        assert f"{cli} -u {url} XADD fixmem:turns" in publish
        added = subprocess.run(
            [cli, "-u", url, "XADD", "fixmem:turns", "*", "event", wire(turn(1)).decode()],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        assert re.fullmatch(r"\d+-\d+", added.stdout.strip()), added.stdout  # the new entry's id
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    assert proc.returncode == 0


@pytest.mark.parametrize(
    ("version", "parsed", "supported"),
    [
        ("6.2.14", (6, 2, 14), True),
        ("6.2.0", (6, 2, 0), True),
        ("7.2.4", (7, 2, 4), True),
        ("8.0.0-rc1", (8, 0, 0), True),
        ("6.0.16", (6, 0, 16), False),
        ("5.0.7", (5, 0, 7), False),
        ("", (), False),
        ("unknown", (), False),
    ],
)
def test_redis_version_table(version: str, parsed: tuple[int, ...], supported: bool) -> None:
    assert parse_redis_version(version) == parsed
    assert version_supported(version) is supported


@pytest.mark.usefixtures("redis_reports_6_0")
def test_up_refuses_a_configured_redis_older_than_6_2(tmp_path: Path, redis_url: str) -> None:
    settings = Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(tmp_path)})
    out = io.StringIO()
    with pytest.raises(CliError) as refused, redis_for(settings, out):
        pytest.fail("up went on with Redis 6.0")
    assert refused.value.code == ExitCode.REDIS_UNAVAILABLE
    assert f"the Redis at {redis_url} is version 6.0.16: fixmem needs Redis >= 6.2" in str(refused.value)
    assert out.getvalue() == ""
