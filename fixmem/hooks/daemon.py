"""The local recall daemon: ``python -m fixmem.hooks.daemon``, the warm store behind local-mode hooks.

Started by a hook that found none answering (``fixmem.hooks.daemon_client``), detached. It takes an
exclusive ``flock`` of ``<data_dir>/hooks/recall.lock`` first (a second daemon exits at once, before
any slow import), imports the store, loads the project it was started for, then binds
``<data_dir>/hooks/recall.sock`` (mode 0600: only the data directory's user) and answers one JSON line
per connection with ``LocalReader.recall`` — the same code, hence the same answers, as an in-process
recall; the store's cache re-reads a log that changed. A request of kind ``cli`` is a read-only
``fixmem`` command line the console script forwards (``fixmem.__main__``): it runs the click command
itself (``fixmem.cli.warm``; ``--warm-cli`` imports it before the socket is bound) and answers its exit
code and output. It exits after ``FIXMEM_HOOK_DAEMON_IDLE_SECONDS``
without a request, or when its socket file is removed or replaced. Failures are logged and counted
under ``<data_dir>/hooks/`` (``daemon``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import socket
import time

from fixmem.hooks.config import HookConfig
from fixmem.hooks.daemon_client import LOCK_NAME, PROTOCOL, SOCKET_NAME
from fixmem.hooks.reader import LocalReader, Query, ReaderError
from fixmem.hooks.session import note_failure

MAX_REQUEST_BYTES = 1 << 20
TICK_SECONDS = 1.0  # how often an idle daemon checks its socket file and its idle time
CONNECTION_TIMEOUT_SECONDS = 5.0


def answer(reader: LocalReader, raw: bytes) -> dict[str, object]:
    """The answer to one request line: ``{"ok": true, "candidates": [[id, files, line], …]}`` (a recall),
    ``{"ok": true, "code": …, "stdout": …, "stderr": …}`` (kind ``cli``), ``{"ok": true, "localized":
    [[path, weight, why], …]}`` (kind ``localize``: null while the checkout's index is cold) or ``{"ok":
    false, "error": …}``. A recall with a ``checkout`` is localized there first."""
    try:
        request = json.loads(raw)
        if not isinstance(request, dict) or request.get("v") != PROTOCOL:
            raise ValueError(f"not a protocol {PROTOCOL} request")
        if request.get("kind") == "cli":
            return _run_command(request)
        if request.get("kind") == "localize":  # a remote-mode hook: where the task points in its checkout
            guesses = reader.localized(str(request["checkout"]), str(request["q"]))
            where = None if guesses is None else [[g.path, g.weight, g.why] for g in guesses]
            return {"ok": True, "localized": where}
        files, weights, reasons = request.get("files") or [], request.get("weights"), request.get("reasons")
        error, checkout = request.get("error"), request.get("checkout")
        query = Query(
            str(request["q"]),
            tuple(str(f) for f in files),
            str(error) if error else None,
            weights=None if weights is None else tuple(float(w) for w in weights),
            checkout=str(checkout) if checkout else None,
            reasons=None if reasons is None else tuple(str(r) for r in reasons),
        )
        found = reader.recall(
            str(request["owner"]),
            str(request["project"]),
            query,
            int(request["k"]),
            int(request["budget_tokens"]),
        )
    except Exception as exc:  # one bad request must not stop the daemon
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "candidates": [c.to_json() for c in found]}


def _run_command(request: dict[str, object]) -> dict[str, object]:
    """Run a forwarded command line (``argv``, ``env``, ``cwd``, ``prog``); raises on a bad request."""
    from fixmem.cli import warm  # noqa: PLC0415 - click, pydantic, the store: only once the CLI asks

    argv, env = request["argv"], request["env"]
    if not isinstance(argv, list) or not isinstance(env, dict):
        raise ValueError("argv must be a list and env an object")
    code, out, err = warm.run(argv, env, str(request["cwd"]), str(request["prog"]))
    return {"ok": True, "code": code, "stdout": out, "stderr": err}


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\n" not in data and len(data) <= MAX_REQUEST_BYTES:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\n")[0]


def serve(
    config: HookConfig,
    *,
    warm: tuple[str, str] | None = None,
    warm_cli: bool = False,
    warm_checkout: str | None = None,
    idle_seconds: float | None = None,
) -> int:
    """Serve until idle for ``idle_seconds`` (default: the config's); the number of requests answered,
    or -1 when another daemon holds the lock. ``warm_cli``: import the forwarded commands first."""
    idle = config.daemon_idle_seconds if idle_seconds is None else idle_seconds
    hooks_dir = config.hooks_dir
    os.makedirs(hooks_dir, exist_ok=True)
    with open(os.path.join(hooks_dir, LOCK_NAME), "a+b") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return -1
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n".encode())
        lock.flush()
        reader = LocalReader(config)
        if warm_cli:
            from fixmem.cli import warm as cli  # noqa: PLC0415 - what the console script's requests run

            cli.warm_up()
        if warm is not None:  # imports the store and parses that project's log before answering
            try:
                reader.recall(warm[0], warm[1], Query("warm up"), 1, config.prompt_budget_tokens)
            except ReaderError as exc:
                note_failure(hooks_dir, "daemon", f"warming {warm[1]}: {exc}")
        if warm_checkout:  # its index loaded or built (in a child) while the session starts
            reader.localized(warm_checkout, "")
        return _listen(reader, hooks_dir, idle)


def _listen(reader: LocalReader, hooks_dir: str, idle: float) -> int:
    os.chdir(hooks_dir)  # bind by a relative name: a long data dir does not fit AF_UNIX's ~107 bytes
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET_NAME)  # a dead daemon's (we hold the lock: no live one uses it)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o077)
    try:
        server.bind(SOCKET_NAME)
    finally:
        os.umask(old_umask)
    bound = os.stat(SOCKET_NAME).st_ino
    server.listen(64)
    server.settimeout(min(TICK_SECONDS, idle) if idle > 0 else TICK_SECONDS)
    served, last = 0, time.monotonic()
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if time.monotonic() - last >= idle or not _still_ours(bound):
                    return served
                reader.poll()  # reap the index builds that ended
                continue
            with conn:
                conn.settimeout(CONNECTION_TIMEOUT_SECONDS)
                try:
                    reply = answer(reader, _read_request(conn))
                    conn.sendall(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
                    served += 1
                except OSError as exc:  # the hook gave up waiting: its loss, not ours
                    note_failure(hooks_dir, "daemon", f"answering: {exc}")
            last = time.monotonic()
    finally:
        server.close()
        if _still_ours(bound):
            os.unlink(SOCKET_NAME)


def _still_ours(inode: int) -> bool:
    try:
        return os.stat(SOCKET_NAME).st_ino == inode
    except OSError:
        return False


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    """The daemon's entry point; always 0 (failures go to the hook log)."""
    parser = argparse.ArgumentParser(prog="python -m fixmem.hooks.daemon")
    parser.add_argument("--warm-owner", default="")
    parser.add_argument("--warm-project", default="")
    parser.add_argument("--warm-cli", action="store_true", help="import the CLI's forwarded commands")
    parser.add_argument("--warm-checkout", default="", help="load or build this checkout's index")
    args = parser.parse_args(argv)
    config = HookConfig.from_env()
    warm = (args.warm_owner, args.warm_project) if args.warm_owner and args.warm_project else None
    signal.signal(signal.SIGTERM, _terminate)  # leave no socket behind
    try:
        serve(config, warm=warm, warm_cli=args.warm_cli, warm_checkout=args.warm_checkout or None)
    except Exception as exc:
        note_failure(config.hooks_dir, "daemon", f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
