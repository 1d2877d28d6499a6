"""The ``fixmem`` command: ``main`` is the console script; ``python -m fixmem`` runs the click CLI.

The console script answers the read-only questions through the warm daemon, the rest through click.

``fixmem recall``, ``stats``, ``projects`` and ``status`` spend ~0.5 s importing click, pydantic, the
store and Redis's client in a fresh process. When the data directory's recall daemon
(``fixmem.hooks.daemon``, the one the hooks use) answers, this module, which imports the standard library
only, sends it the command line, the environment and the working directory; the daemon runs the same
click command there (``fixmem.cli.warm``) and sends back its exit code and what it printed, which are
printed here. Everything else runs the click CLI in this process, unchanged (``fixmem.cli.main``):

- another command, ``-h``/``--help``/``--version``, a ``-`` argument (stdin), standard streams not in
  UTF-8, ``FIXMEM_HOOK_DAEMON_IDLE_SECONDS=0`` (the daemon is off);
- no daemon answering on ``<data_dir>/hooks/recall.sock`` (the data dir of ``--data-dir``, else
  ``FIXMEM_DATA_DIR``, else the default: ``fixmem.identity.resolve_data_dir``, the rule of
  ``Settings``); the script then starts one, detached, when the data directory exists, so the next call
  is fast (it exits after ``FIXMEM_HOOK_DAEMON_IDLE_SECONDS`` without a request);
- an answer that does not come within ``ANSWER_TIMEOUT_SECONDS`` or is not one (logged in
  ``<data_dir>/hooks/hook.log``, kind ``cli``).

``python -m fixmem`` always runs the click CLI in its process: the local path, whatever runs.
"""

from __future__ import annotations

import os
import sys

from fixmem.identity import resolve_data_dir

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping, Sequence

FORWARDED = frozenset({"recall", "stats", "projects", "status"})  # read-only: answered by the daemon
LOCAL_ONLY_ARGS = frozenset({"-h", "--help", "--version", "-"})
ANSWER_TIMEOUT_SECONDS = 10.0  # the daemon answers one request at a time: a hook's may be ahead


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``fixmem argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        answered = forward(args, os.environ)
    except KeyboardInterrupt:  # as click says it
        sys.stderr.write("\naborted\n")
        return 130
    if answered is None:
        from fixmem.cli import main as click_main  # noqa: PLC0415 - click, pydantic …: the local path

        return click_main(args)
    code, out, err = answered
    sys.stdout.write(out)
    sys.stdout.flush()
    sys.stderr.write(err)
    return code


def data_dir_of(args: Sequence[str], env: Mapping[str, str]) -> str:
    """The data directory ``args`` mean: the last ``--data-dir`` before ``--``, else the environment's."""
    flag = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--data-dir" and i + 1 < len(args):
            flag = args[i + 1]
        elif arg.startswith("--data-dir="):
            flag = arg.partition("=")[2]
    return os.path.abspath(resolve_data_dir(flag, env))


def forwardable(args: Sequence[str]) -> bool:
    """Whether the daemon may answer ``args``: a forwarded command, nothing read from stdin, no help."""
    if not args or args[0] not in FORWARDED or LOCAL_ONLY_ARGS.intersection(args):
        return False
    encodings = (getattr(stream, "encoding", None) or "" for stream in (sys.stdout, sys.stderr))
    return all(e.lower().replace("-", "") == "utf8" for e in encodings)


def forward(args: Sequence[str], env: Mapping[str, str]) -> tuple[int, str, str] | None:
    """The daemon's answer to ``args`` (exit code, stdout, stderr), or None: run it locally (starting
    the daemon when none answers)."""
    if not forwardable(args):
        return None
    from fixmem.hooks.config import HookConfig  # noqa: PLC0415 - the hooks' stdlib settings
    from fixmem.hooks.daemon_client import SOCKET_NAME, connect  # noqa: PLC0415

    idle = HookConfig.from_env(env).daemon_idle_seconds
    if idle <= 0:
        return None
    data_dir = data_dir_of(args, env)
    try:
        sock = connect(os.path.join(data_dir, "hooks", SOCKET_NAME), ANSWER_TIMEOUT_SECONDS)
    except OSError:
        _start(data_dir, idle)
        return None
    return _ask(sock, data_dir, args, env)


def _ask(
    sock: socket.socket, data_dir: str, args: Sequence[str], env: Mapping[str, str]
) -> tuple[int, str, str] | None:
    """Send ``args`` to the daemon on ``sock``: its answer, or None (the failure logged)."""
    from fixmem.hooks.daemon_client import PROTOCOL, exchange  # noqa: PLC0415
    from fixmem.hooks.session import note_failure  # noqa: PLC0415

    try:
        request = {
            "v": PROTOCOL,
            "kind": "cli",
            "argv": list(args),
            "env": {**env, **_terminal_size(env)},
            "cwd": os.getcwd(),
            "prog": prog_name(),
        }
        answer = exchange(sock, request)
        if answer.get("ok") is not True:
            raise ValueError(f"the daemon refused: {answer.get('error')}")
        code, out, err = answer["code"], answer["stdout"], answer["stderr"]
        if not (isinstance(code, int) and isinstance(out, str) and isinstance(err, str)):
            raise ValueError("the daemon's answer has no code, stdout and stderr")
    except (OSError, ValueError, KeyError) as exc:
        note_failure(os.path.join(data_dir, "hooks"), "cli", f"{args[0]}: {type(exc).__name__}: {exc}")
        return None
    return code, out, err


def _start(data_dir: str, idle: float) -> None:
    """Start the data directory's daemon unless one is starting (or the data directory does not exist:
    a mistyped ``--data-dir`` creates nothing)."""
    from fixmem.hooks.config import HookConfig  # noqa: PLC0415
    from fixmem.hooks.daemon_client import daemon_running, start_daemon  # noqa: PLC0415

    hooks_dir = os.path.join(data_dir, "hooks")
    try:
        if os.path.isdir(data_dir) and not daemon_running(hooks_dir):
            os.makedirs(hooks_dir, exist_ok=True)
            start_daemon(HookConfig(data_dir, "", daemon_idle_seconds=idle), cli=True)
    except OSError:
        pass  # the local path answers; the next call tries again


def _terminal_size(env: Mapping[str, str]) -> dict[str, str]:
    """``COLUMNS`` and ``LINES`` of this terminal where the environment does not set them, as
    ``shutil.get_terminal_size`` finds them here: what click wraps usage lines to (the daemon has no
    terminal)."""
    if env.get("COLUMNS") and env.get("LINES"):
        return {}
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return {}
    found = {"COLUMNS": str(size.columns), "LINES": str(size.lines)}
    return {name: value for name, value in found.items() if not env.get(name)}


def prog_name() -> str:
    """The program name click's usage lines show: the script's file name, or ``python -m <module>``
    (click's rule, ``click.utils._detect_program_name``)."""
    path = sys.argv[0] if sys.argv else ""
    package = getattr(sys.modules.get("__main__"), "__package__", None)
    if not package:
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


if __name__ == "__main__":  # python -m fixmem
    from fixmem.cli import main as click_main

    sys.exit(click_main())
