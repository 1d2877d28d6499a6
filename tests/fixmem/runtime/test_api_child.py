"""``fixmem up --demo`` runs the API too: it prints the URL and a demo token that work over real HTTP."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from fixmem.api.auth import load_ops_tokens, load_tokens
from fixmem.errors import CliError
from fixmem.runtime.api_child import api_child
from fixmem.runtime.demo import OWNER, PROJECT, QUERY
from fixmem.runtime.state import saved_ports
from fixmem.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for raw in stream:  # type: ignore[attr-defined]
        into.put(raw.decode(errors="replace"))


@pytest.mark.slow
def test_up_serves_the_api_with_a_printed_demo_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    env |= {"FIXMEM_DATA_DIR": str(tmp_path / "data"), "FIXMEM_API_PORT": "0", "FIXMEM_WORKERS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fixmem", "up", "--demo"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    out: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, out), daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while not any(line.startswith("running:") for line in seen):
            assert proc.poll() is None, "".join(seen)
            assert time.monotonic() < deadline, "".join(seen)
            try:
                seen.append(out.get(timeout=1))
            except queue.Empty:
                continue
        api_line = next(line for line in seen if line.startswith("api ") and "http" in line)
        base = api_line.split()[1].removesuffix("/api/fix-memory")
        token = next(
            line for line in seen if line.startswith("token ") and f"owner {OWNER}," in line
        ).split()[1]
        assert any(line.startswith("try ") and token in line for line in seen)

        deadline = time.monotonic() + 60
        while True:  # the API child may still be starting
            try:
                if httpx.get(base + "/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the API did not come up"
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {token}"}
        recall = httpx.get(
            base + "/api/fix-memory", params={"project_id": PROJECT, "q": QUERY}, headers=headers
        )
        assert recall.status_code == 200, recall.text
        assert recall.json()["prompt_block"].startswith("Past fixes in this project")
        assert (
            httpx.get(base + "/api/fix-memory", params={"project_id": PROJECT, "q": QUERY}).status_code == 401
        )
        assert httpx.get(base + "/readyz").json()["status"] == "ready"
        scrape = httpx.get(base + "/metrics").text
        assert 'fixmem_entries_total{outcome="fixed"} 1.0' in scrape
        assert "fixmem_workers 1.0" in scrape
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0


def _settings(data_dir: Path, **env: str) -> Settings:
    return Settings.from_env({"HOME": "/nonexistent", "FIXMEM_DATA_DIR": str(data_dir), **env})


def test_the_api_child_takes_a_free_port_when_the_default_one_is_taken(tmp_path: Path) -> None:
    default = Settings.model_fields["api_port"].default
    with contextlib.ExitStack() as stack:
        with contextlib.suppress(OSError):  # already taken (another `up` here): just as good
            stack.enter_context(socket.create_server(("127.0.0.1", default)))
        child = stack.enter_context(
            contextlib.closing(api_child(_settings(tmp_path), "redis://127.0.0.1:6399/0"))
        )
        port = int(child.base_url.rsplit(":", 1)[1])
        assert port != default
        argv = list(child.spec.argv)
        fd = child.listener.fileno()
        assert argv[argv.index("serve") :][:7] == [
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--fd",
            str(fd),
        ]
        assert child.spec.pass_fds == (fd,)
        with pytest.raises(CliError, match=f"cannot listen on 127.0.0.1:{default}.*FIXMEM_API_PORT"):
            api_child(_settings(tmp_path, FIXMEM_API_PORT=str(default)), "redis://127.0.0.1:6399/0")


def test_the_api_child_keeps_a_token_for_you_and_the_demo_only_without_configured_tokens(
    tmp_path: Path,
) -> None:
    """One token per owner ``up`` serves: yours (FIXMEM_OWNER, what `recall` means) and the demo's, and an
    operator's token for you; kept in the data directory (0600), the same ones the next time."""
    child = api_child(
        _settings(tmp_path, FIXMEM_API_PORT="0", FIXMEM_OWNER="alice"), "redis://127.0.0.1:6399/0"
    )
    assert set(child.tokens) == {"alice", OWNER} and all(len(t) >= 24 for t in child.tokens.values())
    assert child.spec.env is not None and "FIXMEM_API_TOKENS" not in child.spec.env
    served = Settings.from_env({k: v for k, v in child.spec.env.items() if k.startswith("FIXMEM_API")})
    assert {t: load_tokens(served).owner(t) for t in child.tokens.values()} == {
        t: o for o, t in child.tokens.items()
    }
    assert child.operator_token and load_ops_tokens(served).owner(child.operator_token) == "alice"
    for name in ("tokens", "ops-tokens"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    assert any(child.tokens[OWNER] in line and "curl" in line for line in child.lines)
    assert any(child.tokens["alice"] in line and "owner alice," in line for line in child.lines)
    assert any(child.operator_token in line and line.startswith("operator ") for line in child.lines)
    assert any(line.startswith("web UI ") and line.split()[2].endswith("/ui") for line in child.lines)
    again = api_child(_settings(tmp_path, FIXMEM_OWNER="alice"), "redis://127.0.0.1:6399/0")
    assert (again.tokens, again.operator_token) == (child.tokens, child.operator_token)
    configured = api_child(
        _settings(tmp_path / "other", FIXMEM_API_PORT="0", FIXMEM_API_TOKENS="t:alice"), "redis://x:1/0"
    )
    assert configured.tokens == {} and configured.operator_token is None
    assert not any("curl" in line for line in configured.lines)
    assert not (tmp_path / "other" / "tokens").exists()
    for each in (child, again, configured):
        each.close()


def test_the_api_child_holds_its_port_so_two_ups_never_pick_the_same(tmp_path: Path) -> None:
    """``up`` binds the API's socket and passes it to the child: between choosing the port and the
    child's start nobody else can take it (two ``up``s started together once both chose 8765, and one's
    readiness check was answered by the other's API)."""
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(contextlib.closing(api_child(_settings(tmp_path / "a"), "redis://x:1/0")))
        second = stack.enter_context(
            contextlib.closing(api_child(_settings(tmp_path / "b"), "redis://x:1/0"))
        )
        assert first.base_url != second.base_url
        port = first.listener.getsockname()[1]
        with pytest.raises(OSError):
            socket.create_server(("127.0.0.1", port))
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # it listens: connections queue
            pass
    assert can_listen(port)  # closed with the block


def can_listen(port: int) -> bool:
    try:
        with socket.create_server(("127.0.0.1", port)):
            return True
    except OSError:
        return False


def test_the_api_child_reuses_its_saved_port_and_says_when_it_is_taken(tmp_path: Path) -> None:
    first = api_child(_settings(tmp_path, FIXMEM_API_PORT="0"), "redis://127.0.0.1:6399/0")
    port = int(first.base_url.rsplit(":", 1)[1])
    assert saved_ports(tmp_path)["api"] == port
    first.close()
    again = api_child(_settings(tmp_path), "redis://127.0.0.1:6399/0")  # unset: the saved one, not 8765
    assert again.base_url == first.base_url and "taken" not in again.lines[0]
    again.close()
    with socket.create_server(("127.0.0.1", port)):
        moved = api_child(_settings(tmp_path), "redis://127.0.0.1:6399/0")
        moved.close()
    assert moved.base_url != first.base_url
    assert f"(port {port}, used last time, is taken now)" in moved.lines[0]
    assert saved_ports(tmp_path)["api"] == int(moved.base_url.rsplit(":", 1)[1])
    assert moved.ready_url == moved.base_url + "/readyz"
