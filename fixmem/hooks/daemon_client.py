"""The hooks' client of the local recall daemon (``fixmem.hooks.daemon``): stdlib only.

Local mode without a server: a hook process that imported the store would pay ~0.5 s of imports and a
cold parse of the log on every call, so hooks ask a warm daemon of the data directory over
``<data_dir>/hooks/recall.sock`` (one JSON line each way, one request per connection). The daemon holds
an exclusive ``flock`` of ``recall.lock`` for its whole life, so "the lock is held but the socket does not
answer" means "starting". Cold start (no daemon answers): the hook starts one, detached, then either
waits for it up to ``FIXMEM_HOOK_COLD_WAIT_SECONDS`` (the prompt hook: the task's first recall is the
one that matters) or raises ``ColdStart`` at once (the tool hooks: nothing is injected, nothing is
recorded as seen, the next call finds the daemon warm).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time

from fixmem.hooks.config import HookConfig
from fixmem.hooks.http import recv_all
from fixmem.hooks.reader import Candidate, ColdStart, Query, Reader, ReaderError

SOCKET_NAME = "recall.sock"
LOCK_NAME = "recall.lock"
PROTOCOL = 1
MAX_ANSWER_BYTES = 8 << 20
POLL_SECONDS = 0.02
START_GRACE_SECONDS = 2.0  # a daemon takes its lock within this (before its slow imports), or it died


def connect(path: str, timeout: float) -> socket.socket:
    """A unix socket connected to ``path`` (through its directory when the path is too long for
    ``AF_UNIX``, ~107 bytes). Raises OSError."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        if len(os.fsencode(path)) < 100:
            sock.connect(path)
        else:
            here = os.open(".", os.O_RDONLY)
            try:
                os.chdir(os.path.dirname(path))
                sock.connect(os.path.basename(path))
            finally:
                os.fchdir(here)
                os.close(here)
    except BaseException:
        sock.close()
        raise
    return sock


def exchange(sock: socket.socket, request: dict[str, object]) -> dict[str, object]:
    """Send one request line, read the answer to EOF. Raises OSError, ValueError."""
    with sock:
        sock.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        raw = recv_all(sock, MAX_ANSWER_BYTES)
    answer = json.loads(raw)
    if not isinstance(answer, dict):
        raise ValueError("the daemon's answer is not a JSON object")
    return answer


def daemon_running(hooks_dir: str) -> bool:
    """Whether a daemon holds the lock of ``hooks_dir`` (starting or serving)."""
    try:
        with open(os.path.join(hooks_dir, LOCK_NAME), "a+b") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def start_daemon(
    config: HookConfig, warm: tuple[str, str] | None = None, *, cli: bool = False, checkout: str | None = None
) -> None:
    """Start ``python -m fixmem.hooks.daemon`` for the data directory, detached (own session, no stdio);
    ``warm``: the (owner, project) it loads before it answers; ``cli``: it imports the CLI's forwarded
    commands first (``fixmem.__main__`` starts it); ``checkout``: it loads or builds that checkout's index."""
    import subprocess  # noqa: PLC0415 - only on a cold start

    env = {**os.environ, "FIXMEM_DATA_DIR": config.data_dir}
    env["FIXMEM_HOOK_DAEMON_IDLE_SECONDS"] = str(config.daemon_idle_seconds)
    argv = [sys.executable, "-m", "fixmem.hooks.daemon"]
    if warm is not None:
        argv += ["--warm-owner", warm[0], "--warm-project", warm[1]]
    if cli:
        argv.append("--warm-cli")
    if checkout:
        argv += ["--warm-checkout", checkout]
    subprocess.Popen(
        argv,
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


class DaemonReader(Reader):
    """Recall through the data directory's daemon, starting it on a cold start (``wait_cold``: wait for
    it, else raise ColdStart)."""

    def __init__(self, config: HookConfig, *, wait_cold: bool = False) -> None:
        self.config, self.wait_cold = config, wait_cold
        self.path = os.path.join(config.hooks_dir, SOCKET_NAME)
        self.cold = False  # whether the last call found no daemon answering

    def candidates(self, project: str, query: Query) -> list[Candidate]:
        body = query.to_json()
        if not body["q"] or not self.config.owner:
            return []
        request = {
            **body,
            "v": PROTOCOL,
            "owner": self.config.owner,
            "project": project,
            "k": self.config.k,
            "budget_tokens": self.config.prompt_budget_tokens,
        }
        if query.checkout and self.config.localize:  # the daemon localizes the task in it
            request["checkout"] = query.checkout
        self.cold = False
        try:
            sock = connect(self.path, self.config.timeout_seconds)
            timeout = self.config.timeout_seconds
        except (FileNotFoundError, ConnectionRefusedError):
            self.cold = True
            sock, timeout = self._cold_start(project)
        except OSError as exc:
            raise ReaderError(f"recall daemon at {self.path}: {exc}") from exc
        try:
            sock.settimeout(timeout)
            answer = exchange(sock, request)
        except (OSError, ValueError) as exc:
            raise ReaderError(f"recall daemon at {self.path}: {exc}") from exc
        if answer.get("ok") is not True:
            raise ReaderError(f"recall daemon: {answer.get('error')}")
        try:
            items = answer["candidates"]
            if not isinstance(items, list):
                raise TypeError("candidates is not a list")
            return [Candidate.from_json(item) for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise ReaderError(f"unexpected daemon answer: {exc!r}") from exc

    def _cold_start(self, project: str) -> tuple[socket.socket, float]:
        """Start the daemon unless one is starting; a connected socket and the time left to wait for
        the answer (raises ColdStart when not waiting, ReaderError when it does not come up in time)."""
        hooks_dir = self.config.hooks_dir
        try:
            os.makedirs(hooks_dir, exist_ok=True)
            if not daemon_running(hooks_dir):
                start_daemon(self.config, (self.config.owner, project))
        except OSError as exc:
            raise ReaderError(f"cannot start the recall daemon in {hooks_dir}: {exc}") from exc
        if not self.wait_cold:
            raise ColdStart(f"recall daemon starting in {hooks_dir}; nothing injected this time")
        started = time.monotonic()
        deadline = started + self.config.cold_wait_seconds
        while True:
            try:
                return connect(self.path, self.config.timeout_seconds), max(deadline - time.monotonic(), 0.05)
            except OSError as exc:
                now = time.monotonic()
                if now > deadline:
                    raise ReaderError(
                        f"recall daemon did not start within {self.config.cold_wait_seconds} s"
                    ) from exc
                if now - started > START_GRACE_SECONDS and not daemon_running(hooks_dir):
                    raise ReaderError(f"recall daemon exited at start (see {hooks_dir}/hook.log)") from exc
                time.sleep(POLL_SECONDS)


def localized_by_daemon(config: HookConfig, checkout: str, text: str) -> list[tuple[str, float, str]] | None:
    """(file, weight, why) of where ``text`` points in ``checkout``, asked of the data directory's daemon (a
    remote-mode hook: the index stays warm there, a hook process could not load it in its budget); None
    while the index is cold, or no daemon answers (one is started for the next prompt). Raises
    ReaderError."""
    request: dict[str, object] = {"v": PROTOCOL, "kind": "localize", "checkout": checkout, "q": text}
    path = os.path.join(config.hooks_dir, SOCKET_NAME)
    try:
        sock = connect(path, config.timeout_seconds)
    except (FileNotFoundError, ConnectionRefusedError):
        try:
            os.makedirs(config.hooks_dir, exist_ok=True)
            if not daemon_running(config.hooks_dir):
                start_daemon(config)
        except OSError as exc:
            raise ReaderError(f"cannot start the recall daemon in {config.hooks_dir}: {exc}") from exc
        return None
    except OSError as exc:
        raise ReaderError(f"recall daemon at {path}: {exc}") from exc
    try:
        answer = exchange(sock, request)
        if answer.get("ok") is not True:
            raise ValueError(str(answer.get("error")))
        found = answer["localized"]
        if found is None:
            return None
        if not isinstance(found, list):
            raise TypeError("localized is not a list")
        return [(str(item[0]), float(item[1]), str(item[2]) if len(item) > 2 else "") for item in found]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise ReaderError(f"recall daemon, localizing: {exc}") from exc


def warm_daemon(config: HookConfig, warm: tuple[str, str] | None, checkout: str | None) -> None:
    """Start the daemon if none runs (``warm``: the project it loads), and have it load or build the index
    of ``checkout`` (``SessionStart``: the session's first prompt finds both warm). Raises OSError."""
    if not daemon_running(config.hooks_dir):
        os.makedirs(config.hooks_dir, exist_ok=True)
        start_daemon(config, warm, checkout=checkout)
    elif checkout:
        try:
            localized_by_daemon(config, checkout, "")  # no text: only starts the index's load or build
        except ReaderError as exc:
            from fixmem.hooks.session import note_failure  # noqa: PLC0415

            note_failure(config.hooks_dir, "localize", str(exc))
