"""A real API server for tests: the shipped context and app under uvicorn, in a thread, on a free port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from fixmem.api.app import ApiContext
from fixmem.api.server import build_context, make_server
from fixmem.settings import Settings

ALICE = "tok-alice-5f0c1e2d9a8b7c6d"
BOB = "tok-bob-0a1b2c3d4e5f6a7b"
TOKENS = f"{ALICE}:alice,{BOB}:bob"


@dataclass(frozen=True)
class RunningApi:
    """A served API: its base URL and the context behind it (store, metrics, settings)."""

    url: str
    ctx: ApiContext


def api_settings(env: Mapping[str, str]) -> Settings:
    """Settings from ``env`` (FIXMEM_* names) with the test tokens unless ``env`` names others."""
    return Settings.from_env({"FIXMEM_API_TOKENS": TOKENS, "HOME": "/nonexistent", **env})


@contextmanager
def serve(ctx: ApiContext) -> Iterator[RunningApi]:
    """Serve ``ctx`` with uvicorn on 127.0.0.1 (a free port) until the block ends."""
    server = make_server(ctx, host="127.0.0.1", port=0, log_level="warning")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield RunningApi(f"http://127.0.0.1:{port}", ctx)
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


@contextmanager
def running_api(env: Mapping[str, str]) -> Iterator[RunningApi]:
    """``build_context`` from ``env`` (as ``fixmem serve`` does), served."""
    with serve(build_context(api_settings(env))) as api:
        yield api
