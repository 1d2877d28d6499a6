"""The HTTP API as a child of ``fixmem up``: its command line, its port, its token, what ``up`` prints.

Port: ``FIXMEM_API_PORT`` when set to a port (taken: an error); else (unset or 0) the one the last ``up``
of this data directory used (``fixmem.runtime.state``), else 8765 (unset) or any (0); a free one when
that is taken (another ``up`` on this machine), said on the ``api`` line; the port is saved for next time.
``up`` binds the listening socket itself and hands it to the child (``fixmem serve --fd``): no other
process can take the port between the choice and the child's start, two ``up``s started together never
pick the same one, a restarted child serves the same socket, and ``/readyz`` on it is answered by this
``up``'s child only.

Without configured tokens (``FIXMEM_API_TOKENS`` or ``FIXMEM_API_TOKENS_FILE``), ``up`` keeps a token
per owner it serves in ``<data dir>/tokens`` (``fixmem.runtime.tokens``): yours (``Settings.owner``:
``FIXMEM_OWNER``, else the login name — the owner ``fixmem recall`` means and the README's example
publishes as) and the demo's, and an operator's token for you in ``<data dir>/ops-tokens`` (the UI's
Pipeline page). Made on the first ``up``, the same ones after; the child reads the files (watched:
``fixmem token new|revoke`` reach it) and ``up`` prints the tokens.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from fixmem.errors import CliError, ExitCode
from fixmem.runtime.demo import OWNER as DEMO_OWNER
from fixmem.runtime.demo import PROJECT as DEMO_PROJECT
from fixmem.runtime.demo import QUERY as DEMO_QUERY
from fixmem.runtime.state import save_port, saved_ports
from fixmem.runtime.supervisor import ChildSpec
from fixmem.runtime.tokens import TokenStoreError, ensure_tokens, tokens_path
from fixmem.settings import Settings


@dataclass(frozen=True)
class ApiChild:
    """The child to supervise and the lines ``up`` prints about it."""

    spec: ChildSpec
    base_url: str
    tokens: dict[str, str]  # owner -> its token in the data directory; empty when tokens are configured
    lines: tuple[str, ...]
    listener: socket.socket  # bound and listening; the child serves it (``spec.pass_fds``)
    operator_token: str | None = None

    def close(self) -> None:
        """Close ``up``'s copy of the listening socket (after the child has stopped)."""
        self.listener.close()

    @property
    def ready_url(self) -> str:
        """Where ``up`` asks whether the API is ready (a wildcard host is asked on loopback)."""
        host, _, port = self.base_url.removeprefix("http://").rpartition(":")
        host = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "": "127.0.0.1"}.get(host, host)  # noqa: S104
        return f"http://{host}:{port}/readyz"


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (a free port for 0); raises OSError when it cannot be bound."""
    return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)


def _listen_or_explain(host: str, port: int) -> socket.socket:
    """``_listen``, or a CliError that says what to set when ``port`` is taken."""
    try:
        return _listen(host, port)
    except OSError as exc:
        raise CliError(
            f"the API cannot listen on {host}:{port} ({exc.strerror or exc}): set FIXMEM_API_PORT to a free "
            "port (0 picks one) or FIXMEM_API_HOST",
            ExitCode.CONFIG_ERROR,
        ) from exc


def _listener(settings: Settings, *, wait_saved: float) -> tuple[socket.socket, str]:
    """The API's listening socket and a note when the saved port was taken; raises CliError for a taken
    set port."""
    host, given = settings.api_host, "api_port" in settings.model_fields_set
    if given and settings.api_port:
        return _listen_or_explain(host, settings.api_port), ""
    saved = saved_ports(settings.data_dir).get("api")
    wanted = saved or (0 if given else settings.api_port)
    deadline = time.monotonic() + (wait_saved if saved else 0.0)  # a dead `up`'s API is still stopping
    while wanted:
        try:
            return _listen(host, wanted), ""
        except OSError:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    return _listen_or_explain(host, 0), (f" (port {saved}, used last time, is taken now)" if saved else "")


def _data_dir_tokens(settings: Settings) -> tuple[dict[str, str], str | None, dict[str, str]]:
    """Tokens, operator's token and child environment for a data directory's own tokens files."""
    owners = [o for o in dict.fromkeys([settings.owner, DEMO_OWNER]) if o]
    try:
        tokens = ensure_tokens(settings.data_dir, "owner", owners)
        operator = (
            ensure_tokens(settings.data_dir, "operator", [settings.owner])[settings.owner]
            if (settings.owner)
            else None
        )
    except TokenStoreError as exc:
        raise CliError(f"API tokens: {exc}", ExitCode.CONFIG_ERROR) from exc
    env = {"FIXMEM_API_TOKENS_FILE": str(tokens_path(settings.data_dir, "owner"))}
    if settings.api_ops_tokens_file is None:
        env["FIXMEM_API_OPS_TOKENS_FILE"] = str(tokens_path(settings.data_dir, "operator"))
    return tokens, operator, env


def api_child(settings: Settings, redis_url: str, *, wait_saved_port: float = 0.0) -> ApiChild:
    """The ``fixmem serve`` child for ``up``, its socket bound; raises CliError when its port is taken
    or its tokens cannot be kept. The caller closes the socket (``ApiChild.close``) after the child has
    stopped. ``wait_saved_port``: how long the saved port may stay taken (a dead ``up``'s API)."""
    host = settings.api_host
    env = {**os.environ, "FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(settings.data_dir)}
    tokens: dict[str, str] = {}
    operator = None
    if settings.api_tokens is None and settings.api_tokens_file is None:
        tokens, operator, files = _data_dir_tokens(settings)
        env |= files
    listener, note = _listener(settings, wait_saved=wait_saved_port)
    port: int = listener.getsockname()[1]
    save_port(settings.data_dir, "api", port)
    argv = [
        sys.executable, "-m", "fixmem", "serve", "--host", host, "--port", str(port),
        "--fd", str(listener.fileno()), "--parent-pid", str(os.getpid()),
    ]  # fmt: skip
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    lines = [
        f"api        {base}/api/fix-memory   docs {base}/docs   metrics {base}/metrics{note}",
        f"web UI     {base}/ui   (log in with a token)",
        *_token_lines(settings, base, tokens, operator),
    ]
    spec = ChildSpec("api", argv, env, pass_fds=(listener.fileno(),))
    return ApiChild(spec, base, tokens, tuple(lines), listener, operator)


def _token_lines(settings: Settings, base: str, tokens: dict[str, str], operator: str | None) -> list[str]:
    lines = []
    for owner, token in tokens.items():
        whose = (
            "the turns of `fixmem up --demo`"
            if owner == DEMO_OWNER
            else "yours: FIXMEM_OWNER, else your login name"
        )
        lines.append(f"token      {token}   (owner {owner}, {whose})")
    if operator:
        lines.append(f"operator   {operator}   ({settings.owner}: the web UI's Pipeline page)")
    if DEMO_OWNER in tokens:
        query = urlencode({"project_id": DEMO_PROJECT, "q": DEMO_QUERY})
        lines.append(
            f"try        curl -H 'Authorization: Bearer {tokens[DEMO_OWNER]}' '{base}/api/fix-memory?{query}'"
        )
    if tokens:
        where = Path(tokens_path(settings.data_dir, "owner"))
        lines.append(f"           (kept in {where} and ops-tokens beside it: `fixmem token list|new|revoke`)")
    else:
        lines.append("tokens     from FIXMEM_API_TOKENS / FIXMEM_API_TOKENS_FILE")
    return lines
