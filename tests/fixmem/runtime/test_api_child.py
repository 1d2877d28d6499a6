"""``fixmem up --demo`` runs the API too: it prints the URL and a demo token that work over real HTTP."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from fixmem.errors import CliError
from fixmem.runtime.api_child import api_child
from fixmem.runtime.demo import OWNER, PROJECT, QUERY
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


def _settings(**env: str) -> Settings:
    return Settings.from_env({"HOME": "/nonexistent", **env})


def test_the_api_child_takes_a_free_port_when_the_default_one_is_taken() -> None:
    default = Settings.model_fields["api_port"].default
    with contextlib.ExitStack() as stack:
        with contextlib.suppress(OSError):  # already taken (another `up` here): just as good
            stack.enter_context(socket.create_server(("127.0.0.1", default)))
        child = api_child(_settings(), "redis://127.0.0.1:6399/0")
        port = int(child.base_url.rsplit(":", 1)[1])
        assert port != default
        argv = list(child.spec.argv)
        assert argv[argv.index("serve") :][:5] == ["serve", "--host", "127.0.0.1", "--port", str(port)]
        with pytest.raises(CliError, match=f"cannot listen on 127.0.0.1:{default}.*FIXMEM_API_PORT"):
            api_child(_settings(FIXMEM_API_PORT=str(default)), "redis://127.0.0.1:6399/0")


def test_the_api_child_gets_a_token_for_you_and_the_demo_only_without_configured_tokens() -> None:
    """One token per owner ``up`` serves: yours (FIXMEM_OWNER, what `recall` means) and the demo's."""
    child = api_child(_settings(FIXMEM_API_PORT="0", FIXMEM_OWNER="alice"), "redis://127.0.0.1:6399/0")
    assert set(child.tokens) == {"alice", OWNER} and all(len(t) >= 24 for t in child.tokens.values())
    assert child.spec.env is not None
    assert child.spec.env["FIXMEM_API_TOKENS"] == ",".join(f"{t}:{o}" for o, t in child.tokens.items())
    assert any(child.tokens[OWNER] in line and "curl" in line for line in child.lines)
    assert any(child.tokens["alice"] in line and "owner alice," in line for line in child.lines)
    assert any(line.startswith("web UI ") and line.split()[2].endswith("/ui") for line in child.lines)
    configured = api_child(_settings(FIXMEM_API_PORT="0", FIXMEM_API_TOKENS="t:alice"), "redis://x:1/0")
    assert configured.tokens == {}
    assert not any("curl" in line for line in configured.lines)
