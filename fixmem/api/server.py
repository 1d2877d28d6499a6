"""Wiring and running the API: settings in, an ``ApiContext`` out; uvicorn around the app.

``fixmem serve`` calls ``build_context`` then ``run``; tests build a context the same way and serve it
from a thread on a socket they bound (``make_server``), so what they exercise is what ships.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

import uvicorn

from fixmem import service, wiring
from fixmem.api.app import create_app
from fixmem.api.auth import TokenConfigError, load_tokens
from fixmem.api.context import ApiContext
from fixmem.runtime.impact_metrics import WINDOW_SECONDS, ImpactCollector
from fixmem.runtime.metrics import FleetSource, api_metrics, scrape_client
from fixmem.runtime.verified_metrics import VerifiedCollector
from fixmem.settings import Settings
from ingest.connection import connect
from store.impact import ImpactReport

log = logging.getLogger("fixmem.api.server")


def build_context(settings: Settings) -> ApiContext:
    """The API's store, tokens, metrics and Redis client for ``settings``.

    Raises TokenConfigError for malformed tokens or none at all, and when the store needs Redis locks
    (``store_lock=redis``, shared with the workers) but no Redis is configured.
    """
    tokens = load_tokens(settings)
    if not len(tokens):
        raise TokenConfigError(
            "no API tokens configured: set FIXMEM_API_TOKENS='token:owner,…' or FIXMEM_API_TOKENS_FILE"
        )
    url = wiring.resolve_redis_url(settings)
    if url is None and settings.store_lock == "redis":
        raise TokenConfigError(
            "the API needs Redis for the project locks it shares with the workers (forget): set "
            "FIXMEM_REDIS_URL, start `fixmem up`, or set FIXMEM_STORE_LOCK=local on a single host"
        )
    client = connect(url, timeout=settings.redis_timeout_seconds) if url else None
    metrics = api_metrics(scrape_client(url) if url else None, FleetSource.from_settings(settings))
    store = wiring.make_store(settings, client)

    def fleet() -> ImpactReport:  # the sessions of the owners this API serves, ended in the window
        return service.fleet_impact(store, tokens.owners, since=time.time() - WINDOW_SECONDS)

    metrics.registry.register(ImpactCollector(fleet))
    metrics.registry.register(VerifiedCollector(lambda: service.fleet_summaries(store, tokens.owners)))
    return ApiContext(settings=settings, store=store, tokens=tokens, metrics=metrics, client=client)


def make_server(ctx: ApiContext, *, host: str, port: int, log_level: str = "info") -> uvicorn.Server:
    """A uvicorn server for the app of ``ctx`` (the API and the web UI at /ui); no access log (query
    strings hold the callers' tasks)."""
    from fixmem.ui import mount  # noqa: PLC0415 - the UI's templates load when its routes are added

    config = uvicorn.Config(
        create_app(ctx, mounts=[mount]),
        host=host,
        port=port,
        access_log=False,
        log_level=log_level,
        lifespan="off",
        server_header=False,
        log_config=None,  # keep the process's logging (fixmem.runtime.logs)
    )
    return uvicorn.Server(config)


def _stop_with_parent(server: uvicorn.Server, parent: int) -> None:
    """Ask ``server`` to exit when ``parent`` (the ``fixmem up`` supervisor) is gone."""

    def watch() -> None:
        while not server.should_exit:
            if os.getppid() != parent:
                log.warning("parent %d is gone: stopping", parent)
                server.should_exit = True
                return
            threading.Event().wait(1.0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class PortUnavailable(OSError):
    """Raised when the API cannot listen on its host and port (taken, or not an address of this host)."""


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, bound here so that a taken port is our error, not uvicorn's
    exit status 3 (which ``fixmem``'s exit codes give another meaning). Raises PortUnavailable."""
    try:
        return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        raise PortUnavailable(
            f"the API cannot listen on {host}:{port} ({exc.strerror or exc}): another process holds it? "
            "pick another with --port / FIXMEM_API_PORT (0: a free one)"
        ) from exc


def inherited(fd: int) -> socket.socket:
    """The listening socket open on ``fd`` (passed by ``fixmem up``). Raises PortUnavailable."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise PortUnavailable(f"--fd {fd} is not an open socket ({exc.strerror or exc})") from exc
    if sock.type != socket.SOCK_STREAM or sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 0:
        sock.detach()
        raise PortUnavailable(f"--fd {fd} is not a listening TCP socket")
    return sock


def run(
    ctx: ApiContext, *, host: str, port: int, parent_pid: int | None = None, fd: int | None = None
) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn finishes in-flight requests), or until ``parent_pid`` dies.

    ``fd``: an inherited listening socket to serve (``fixmem up`` binds it) instead of binding
    ``host:port``. Raises PortUnavailable when ``host:port`` cannot be bound or ``fd`` is no socket."""
    sock = listen(host, port) if fd is None else inherited(fd)
    server = make_server(ctx, host=host, port=sock.getsockname()[1])
    if parent_pid:
        _stop_with_parent(server, parent_pid)
    log.info(
        "API for %d owner(s) with tokens on %s:%d: /api/fix-memory, /metrics, /healthz, /readyz, /docs",
        len(ctx.tokens.owners), host, sock.getsockname()[1],
    )  # fmt: skip
    with sock:
        server.run(sockets=[sock])
