"""The HTTP API as a child of ``fixmem up``: its command line, its port, its token, what ``up`` prints.

Port: ``FIXMEM_API_PORT`` when set (0: a free one; taken: an error), else 8765, or a free one when 8765
is taken (another ``up`` on this machine). Without configured tokens (``FIXMEM_API_TOKENS`` or
``FIXMEM_API_TOKENS_FILE``), ``up`` makes one random token for the demo owner, hands it to the child in
its environment and prints it; it lives as long as that ``up``.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from dataclasses import dataclass
from urllib.parse import urlencode

from fixmem.demo import OWNER as DEMO_OWNER
from fixmem.demo import PROJECT as DEMO_PROJECT
from fixmem.demo import QUERY as DEMO_QUERY
from fixmem.errors import CliError, ExitCode
from fixmem.settings import Settings
from fixmem.supervisor import ChildSpec


@dataclass(frozen=True)
class ApiChild:
    """The child to supervise and the lines ``up`` prints about it."""

    spec: ChildSpec
    base_url: str
    token: str | None  # the generated demo token; None when tokens are configured
    lines: tuple[str, ...]


def _can_bind(host: str, port: int) -> bool:
    try:
        with socket.create_server((host, port)):
            return True
    except OSError:
        return False


def _free_port(host: str, port: int) -> int:
    """``port`` if it can be bound on ``host`` now (a free one for 0); raises CliError when it is taken."""
    try:
        with socket.create_server((host, port)) as sock:
            bound: int = sock.getsockname()[1]
            return bound
    except OSError as exc:
        raise CliError(
            f"the API cannot listen on {host}:{port} ({exc.strerror or exc}): set FIXMEM_API_PORT to a free "
            "port (0 picks one) or FIXMEM_API_HOST",
            ExitCode.CONFIG_ERROR,
        ) from exc


def api_child(settings: Settings, redis_url: str) -> ApiChild:
    """The ``fixmem serve`` child for ``up``; raises CliError when its port is taken."""
    host = settings.api_host
    if "api_port" in settings.model_fields_set or not _can_bind(host, settings.api_port):
        port = _free_port(host, settings.api_port if "api_port" in settings.model_fields_set else 0)
    else:
        port = settings.api_port
    env = {**os.environ, "FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(settings.data_dir)}
    token = None
    if settings.api_tokens is None and settings.api_tokens_file is None:
        token = secrets.token_urlsafe(24)
        env["FIXMEM_API_TOKENS"] = f"{token}:{DEMO_OWNER}"
    argv = [
        sys.executable, "-m", "fixmem", "serve", "--host", host, "--port", str(port),
        "--parent-pid", str(os.getpid()),
    ]  # fmt: skip
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    lines = [f"api        {base}/api/fix-memory   docs {base}/docs   metrics {base}/metrics"]
    if token is not None:
        query = urlencode({"project_id": DEMO_PROJECT, "q": DEMO_QUERY})
        lines += [
            f"token      {token}   (owner {DEMO_OWNER}; set FIXMEM_API_TOKENS='token:owner,…' for yours)",
            f"try        curl -H 'Authorization: Bearer {token}' '{base}/api/fix-memory?{query}'",
        ]
    else:
        lines.append("tokens     from FIXMEM_API_TOKENS / FIXMEM_API_TOKENS_FILE")
    return ApiChild(ChildSpec("api", argv, env), base, token, tuple(lines))
