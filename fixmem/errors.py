"""Named exit codes and the translation of library errors into one-line CLI errors.

Exit codes follow sysexits(3) where one fits. ``ExitCode`` is the one list of them, and
``EXIT_CODE_MEANINGS`` says what each means; the README's table is ``exit_codes_markdown()`` (a test
keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import click


class ExitCode(IntEnum):
    """Process exit statuses of ``fixmem`` (meanings in ``EXIT_CODE_MEANINGS``)."""

    OK = 0
    FAILURE = 1
    USAGE = 2
    BELOW_FLOORS = 3
    DATA_ERROR = 65
    NOT_FOUND = 66
    REDIS_UNAVAILABLE = 69
    STORE_UNAVAILABLE = 74
    TIMEOUT = 75
    CONFIG_ERROR = 78
    INTERRUPTED = 130


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "done",
    ExitCode.FAILURE: "the command ran and found a problem (a child kept crashing, `notes check` found "
    "malformed lines, a memory file cannot be written, a fix is not found or already promoted, an import "
    "file has invalid lines)",
    ExitCode.USAGE: "bad arguments (click), a refused note",
    ExitCode.BELOW_FLOORS: "`eval --check`: recall quality is under its floors",
    ExitCode.DATA_ERROR: "input that is not valid (an event, a JSONL line, the eval dataset)",
    ExitCode.NOT_FOUND: "the thing named does not exist (a dead letter, an entry, a project of "
    "`recall`/`stats`)",
    ExitCode.REDIS_UNAVAILABLE: "Redis cannot be reached, refuses (OOM, wrong type) or is older than 6.2 "
    "(the message names the URL and what to do)",
    ExitCode.STORE_UNAVAILABLE: "the data directory cannot be read or written",
    ExitCode.TIMEOUT: "waited and it did not finish (`up --demo`, `ingest --burst` under backpressure with "
    "no worker, `forget`/`import` while a project lock stays held)",
    ExitCode.CONFIG_ERROR: "a setting or environment variable has a wrong value",
    ExitCode.INTERRUPTED: "stopped by Ctrl-C",
}


def exit_codes_markdown() -> str:
    """The exit codes as the README's markdown table, one row per ``ExitCode`` member."""
    rows = [f"| {int(code)} | `{code.name}` | {EXIT_CODE_MEANINGS[code]} |" for code in ExitCode]
    return "\n".join(["| code | name | meaning |", "|---|---|---|", *rows])


class CliError(click.ClickException):
    """Raised by commands for a one-line error with a named exit code."""

    def __init__(self, message: str, code: ExitCode = ExitCode.FAILURE) -> None:
        super().__init__(message)
        self.code = code
        self.exit_code = int(code)  # type: ignore[misc]  # click declares it on the class; per error here


class RedisUnavailable(CliError):
    """Raised when Redis at ``url`` does not answer (or none is configured).

    ``origin``: where the URL came from (the setting, the file a ``fixmem up`` wrote); ``advice``: what
    to do about it. Both default to the generic wording.
    """

    def __init__(self, url: str, detail: str, *, origin: str = "", advice: str = "") -> None:
        where = f" ({origin})" if origin else ""
        advice = (
            advice
            or "Start the pipeline with `fixmem up`, or set FIXMEM_REDIS_URL to a running Redis >= 6.2."
        )
        super().__init__(
            f"cannot reach Redis at {url}{where}: {detail}. {advice}", ExitCode.REDIS_UNAVAILABLE
        )
        self.url = url


def translate(exc: BaseException) -> CliError | None:
    """The CLI error for a library exception that escaped a command, or None to let it propagate."""
    if isinstance(exc, CliError):
        return exc
    # imported here, not at the top: every command imports this module, few use all of these
    import redis  # noqa: PLC0415

    from fixmem.settings import SettingsError  # noqa: PLC0415
    from store.errors import StoreError  # noqa: PLC0415
    from workers.errors import LockTimeout  # noqa: PLC0415

    if isinstance(exc, SettingsError):
        return CliError(f"bad setting: {exc}", ExitCode.CONFIG_ERROR)
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return CliError(f"lost the connection to Redis: {exc}", ExitCode.REDIS_UNAVAILABLE)
    if isinstance(exc, redis.exceptions.OutOfMemoryError) or (
        isinstance(exc, redis.exceptions.ResponseError) and "maxmemory" in str(exc)
    ):
        return CliError(
            "Redis is out of memory (maxmemory with noeviction): the pipeline is behind; see `fixmem status`",
            ExitCode.REDIS_UNAVAILABLE,
        )
    if isinstance(exc, StoreError):
        return CliError(f"store: {exc}", ExitCode.STORE_UNAVAILABLE)
    if isinstance(exc, LockTimeout):  # a write waited FIXMEM_LOCK_WAIT_SECONDS for a project's lease
        return CliError(f"{exc}: try again", ExitCode.TIMEOUT)
    return None


def run_group(group: click.Group, argv: Sequence[str] | None = None) -> int:
    """Run a click group in-process; returns the exit code, with library errors turned into one line."""
    try:
        result = group.main(args=list(argv) if argv is not None else None, standalone_mode=False)
        if isinstance(result, int):  # click returns a command's Exit code instead of raising it
            return result
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return int(ExitCode.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except Exception as exc:  # library errors become one line and a named exit code
        error = translate(exc)
        if error is None:
            raise
        error.show()
        return error.exit_code
    return 0
