"""``fixmem serve`` on a port another process holds: a clear message and ``CONFIG_ERROR``, not uvicorn's 3."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

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
