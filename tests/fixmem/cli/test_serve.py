"""``fixmem serve`` on a port another process holds: a clear message and ``CONFIG_ERROR``, not uvicorn's 3."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from fixmem.errors import ExitCode

ROOT = Path(__file__).resolve().parents[3]


def test_serve_on_a_taken_port_says_so_and_exits_config_error(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = holder.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
        env |= {
            "FIXMEM_DATA_DIR": str(tmp_path),
            "FIXMEM_API_TOKENS": "a-token-long-enough-to-pass-the-check:alice",
            "FIXMEM_STORE_LOCK": "local",
        }
        done = subprocess.run(
            [sys.executable, "-m", "fixmem", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == ExitCode.CONFIG_ERROR, done.stderr
    assert f"127.0.0.1:{port}" in done.stderr
    assert "FIXMEM_API_PORT" in done.stderr


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    return env | {
        "FIXMEM_DATA_DIR": str(tmp_path),
        "FIXMEM_API_TOKENS": "a-token-long-enough-to-pass-the-check:alice",
        "FIXMEM_STORE_LOCK": "local",
    }


def test_serve_serves_the_listening_socket_it_is_given(tmp_path: Path) -> None:
    """``fixmem up`` binds the API's socket and passes it (``--fd``): the child serves that socket."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port, fd = listener.getsockname()[1], listener.fileno()
        argv = ["serve", "--host", "127.0.0.1", "--port", str(port), "--fd", str(fd)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "fixmem", *argv], cwd=ROOT, env=_env(tmp_path), pass_fds=(fd,),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while True:  # connections queue on the socket until the child accepts them
                assert proc.poll() is None
                with contextlib.suppress(httpx.TransportError):
                    answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
                    break
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert answer.status_code == 200
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_serve_given_no_listening_socket_says_so(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind(("127.0.0.1", 0))  # bound, not listening
        fd = bound.fileno()
        done = subprocess.run(
            [sys.executable, "-m", "fixmem", "serve", "--fd", str(fd)],
            cwd=ROOT, env=_env(tmp_path), pass_fds=(fd,), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == ExitCode.CONFIG_ERROR, done.stderr
    assert f"--fd {fd} is not a listening TCP socket" in done.stderr
