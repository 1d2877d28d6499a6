"""A ``fixmem`` command line forwarded by the console script (``fixmem.__main__``), run in a warm process.

The recall daemon (``fixmem.hooks.daemon``) keeps click, pydantic, the store and Redis's client imported
and the parsed logs cached. The console script sends it the command line, its environment and its working
directory; ``run`` runs the very click command the local path would run, in that environment and
directory, and returns its exit code and what it printed: the same answer by construction, only without
the ~0.5 s of imports. Only the read-only commands of ``fixmem.__main__.FORWARDED`` run here.

Rules this file obeys: it swaps the process's environment, working directory and standard streams for
the call, so it is for a process that answers one request at a time (the daemon does); every swap is
undone before it returns, whatever the command raised.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Mapping, Sequence

import click

from fixmem import wiring
from fixmem.__main__ import FORWARDED
from fixmem.cli import cli
from fixmem.errors import run_group

# What the forwarded commands import when they run: loaded by ``warm_up`` before the daemon answers.
WARM_MODULES = ("fixmem.service", "ingest.connection", "ingest.status", "redis", "store.recall.search")


def warm_up() -> None:
    """Import the forwarded commands and what they run, and keep reading stores (their caches) warm."""
    import importlib  # noqa: PLC0415

    wiring.keep_reading_stores()
    context = click.Context(cli, info_name="fixmem")
    for name in sorted(FORWARDED):
        cli.get_command(context, name)
    for module in WARM_MODULES:
        importlib.import_module(module)


def run(argv: Sequence[str], env: Mapping[str, str], cwd: str, prog: str) -> tuple[int, str, str]:
    """Run ``prog argv`` (a forwarded command) in ``env`` and ``cwd``: its exit code, stdout and stderr.

    Raises ValueError for a command that is not forwarded or a malformed request, OSError when ``cwd``
    cannot be entered; a bug in the command propagates (the console script then runs it locally).
    """
    args = [str(a) for a in argv]
    if not args or args[0] not in FORWARDED:
        raise ValueError(f"not a forwarded command: {args[:1]}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ValueError("the environment must map strings to strings")
    wiring.keep_reading_stores()
    out, err = io.StringIO(), io.StringIO()
    with _environment(env), _directory(cwd), _streams(out, err):
        try:
            code = run_group(cli, args, prog_name=prog)
        except SystemExit as exc:  # click's ctx.exit, a command's sys.exit: an answer like any other
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)  # raises ValueError on a name putenv refuses: restored below
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _directory(cwd: str) -> Iterator[None]:
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(cwd)
        yield
    finally:
        os.fchdir(here)
        os.close(here)


@contextlib.contextmanager
def _streams(out: io.StringIO, err: io.StringIO) -> Iterator[None]:
    saved_in = sys.stdin
    sys.stdin = io.StringIO()  # the console script forwards no "-" (stdin) argument: nothing to read
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
    finally:
        sys.stdin = saved_in
