"""The HTTP API as a child of ``fixmem up``: its command line, its port, its token, what ``up`` prints.

Port: ``FIXMEM_API_PORT`` when set (0: a free one; taken: an error), else 8765, or a free one when 8765
is taken (another ``up`` on this machine). Without configured tokens (``FIXMEM_API_TOKENS`` or
``FIXMEM_API_TOKENS_FILE``), ``up`` makes one random token per owner it serves: yours (``Settings.owner``:
``FIXMEM_OWNER``, else the login name — the owner ``fixmem recall`` means and the README's example
publishes as) and the demo's; it hands them to the child in its environment and prints them; they live
as long as that ``up``.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from dataclasses import dataclass
from urllib.parse import urlencode

from fixmem.errors import CliError, ExitCode
from fixmem.runtime.demo import OWNER as DEMO_OWNER
from fixmem.runtime.demo import PROJECT as DEMO_PROJECT
from fixmem.runtime.demo import QUERY as DEMO_QUERY
from fixmem.runtime.supervisor import ChildSpec
from fixmem.settings import Settings


@dataclass(frozen=True)
class ApiChild:
    """The child to supervise and the lines ``up`` prints about it."""

    spec: ChildSpec
    base_url: str
    tokens: dict[str, str]  # owner -> the token generated for it; empty when tokens are configured
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
    tokens: dict[str, str] = {}
    if settings.api_tokens is None and settings.api_tokens_file is None:
        tokens = {
            owner: secrets.token_urlsafe(24) for owner in dict.fromkeys([settings.owner, DEMO_OWNER]) if owner
        }
        env["FIXMEM_API_TOKENS"] = ",".join(f"{token}:{owner}" for owner, token in tokens.items())
    argv = [
        sys.executable, "-m", "fixmem", "serve", "--host", host, "--port", str(port),
        "--parent-pid", str(os.getpid()),
    ]  # fmt: skip
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    lines = [
        f"api        {base}/api/fix-memory   docs {base}/docs   metrics {base}/metrics",
        f"web UI     {base}/ui   (log in with a token)",
    ]
    for owner, token in tokens.items():
        whose = (
            "the turns of `fixmem up --demo`"
            if owner == DEMO_OWNER
            else "yours: FIXMEM_OWNER, else your login name"
        )
        lines.append(f"token      {token}   (owner {owner}, {whose})")
    if DEMO_OWNER in tokens:
        query = urlencode({"project_id": DEMO_PROJECT, "q": DEMO_QUERY})
        lines.append(
            f"try        curl -H 'Authorization: Bearer {tokens[DEMO_OWNER]}' '{base}/api/fix-memory?{query}'"
        )
    if tokens:
        lines.append("           (set FIXMEM_API_TOKENS='token:owner,…' for tokens of your own)")
    else:
        lines.append("tokens     from FIXMEM_API_TOKENS / FIXMEM_API_TOKENS_FILE")
    return ApiChild(ChildSpec("api", argv, env), base, tokens, tuple(lines))
