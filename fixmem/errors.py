"""fixmem's error tree, and the one table that maps every failure to an exit code, an HTTP status and a
tool error.

The tree (dramatiq's shape)::

    FixmemError                 the root of fixmem's own errors
    ├── InvalidInput            the caller's input is refused (422, exit 65, the message is shown)
    ├── NotFound                the thing named does not exist (404, exit 66)
    ├── Unavailable             the store or Redis cannot be reached or read (503, exit 74 or 69)
    └── Busy                    a lock stayed held, a conflict: try again (503, exit 75)

Each category is mapped once (``RESPONSES``). The packages keep their own roots (``store.errors``,
``ingest.errors``, ``workers.errors``, redis-py's): ``classify`` translates them into a category in one
table (``_TRANSLATIONS``), so the CLI (``translate``), the HTTP API and the web UI
(``fixmem.api.context.store_errors``) and the MCP tool answer the same failure the same way.

Exit codes follow sysexits(3) where one fits. ``ExitCode`` is the one list of them, and
``EXIT_CODE_MEANINGS`` says what each means; the README's table is ``exit_codes_markdown()`` (a test
keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    "file has invalid lines, `doctor` found a log to repair or a failed index build)",
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
    ExitCode.CONFIG_ERROR: "a setting or environment variable has a wrong value (also: the API's port is "
    "taken)",
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


class FixmemError(Exception):
    """The root of fixmem's own errors: raise one of its categories."""


class InvalidInput(FixmemError, ValueError):
    """Raised when the caller's input is refused; the message says which part and why (it is shown)."""


class NotFound(FixmemError):
    """Raised when the project, entry or dead letter named does not exist."""


class Unavailable(FixmemError):
    """Raised when the store or Redis cannot be reached, read or written."""


class Busy(FixmemError):
    """Raised when a lock stayed held or a write conflicted: trying again may succeed."""


@dataclass(frozen=True)
class Response:
    """How one category answers: the CLI's exit code, the HTTP status, and the text a tool caller or
    an HTTP client reads (None: the error's own message, which is about the caller's input)."""

    exit_code: ExitCode
    http_status: int
    public: str | None


RESPONSES: dict[type[FixmemError], Response] = {
    InvalidInput: Response(ExitCode.DATA_ERROR, 422, None),
    NotFound: Response(ExitCode.NOT_FOUND, 404, "not found"),
    Unavailable: Response(ExitCode.STORE_UNAVAILABLE, 503, "the fix memory is unavailable; try again later"),
    Busy: Response(ExitCode.TIMEOUT, 503, "the fix memory is busy; try again later"),
}


@dataclass(frozen=True)
class Failure:
    """A classified exception: its category, the one-line message (CLI, logs) and the exit code."""

    category: type[FixmemError]
    message: str
    exit_code: ExitCode

    @property
    def http_status(self) -> int:
        return RESPONSES[self.category].http_status

    @property
    def public(self) -> str:
        """What an HTTP client or a tool caller reads: no internals unless the input was theirs."""
        return RESPONSES[self.category].public or self.message


# (matches, category, exit code or None for the category's, message): first match wins, most specific first.
Translation = tuple[
    Callable[[BaseException], bool], type[FixmemError], ExitCode | None, Callable[[BaseException], str]
]


def _translations() -> list[Translation]:
    # imported here, not at the top: every command imports this module, few use all of these
    import redis  # noqa: PLC0415

    from fixmem.settings import SettingsError  # noqa: PLC0415
    from ingest.errors import IngestError, InvalidEvent  # noqa: PLC0415
    from store.errors import InvalidKey, StoreError, StoreUnavailable  # noqa: PLC0415
    from workers.errors import LockTimeout, WorkerError  # noqa: PLC0415

    def oom(exc: BaseException) -> bool:
        return isinstance(exc, redis.exceptions.OutOfMemoryError) or (
            isinstance(exc, redis.exceptions.ResponseError) and "maxmemory" in str(exc)
        )

    def kind(*types: type[BaseException]) -> Callable[[BaseException], bool]:
        return lambda exc: isinstance(exc, types)

    return [
        (kind(SettingsError), InvalidInput, ExitCode.CONFIG_ERROR, lambda e: f"bad setting: {e}"),
        (
            kind(InvalidKey),
            InvalidInput,
            ExitCode.STORE_UNAVAILABLE,
            lambda e: f"invalid project key or owner: {e}",
        ),
        (kind(InvalidEvent), InvalidInput, None, lambda e: f"invalid event: {e}"),
        (
            kind(redis.exceptions.ConnectionError, redis.exceptions.TimeoutError),
            Unavailable,
            ExitCode.REDIS_UNAVAILABLE,
            lambda e: f"lost the connection to Redis: {e}",
        ),
        (
            oom,
            Unavailable,
            ExitCode.REDIS_UNAVAILABLE,
            lambda e: (
                "Redis is out of memory (maxmemory with noeviction): the pipeline is behind; see "
                "`fixmem status`"
            ),
        ),
        (kind(StoreUnavailable, StoreError), Unavailable, None, lambda e: f"store: {e}"),
        # a write waited FIXMEM_LOCK_WAIT_SECONDS for a project's lease
        (kind(LockTimeout), Busy, None, lambda e: f"{e}: try again"),
        (kind(WorkerError), Busy, None, lambda e: f"{e}: try again"),
        (kind(redis.exceptions.RedisError, IngestError), Unavailable, ExitCode.REDIS_UNAVAILABLE, str),
    ]


def classify(exc: BaseException) -> Failure | None:
    """The category of ``exc`` (one of fixmem's, or a package's error translated), or None when it is
    none of them (a bug: let it propagate)."""
    for category, response in RESPONSES.items():
        if isinstance(exc, category):
            return Failure(category, str(exc), response.exit_code)
    for matches, category, code, message in _translations():
        if matches(exc):
            return Failure(category, message(exc), code or RESPONSES[category].exit_code)
    return None


def translate(exc: BaseException) -> CliError | None:
    """The CLI error for a library exception that escaped a command, or None to let it propagate."""
    if isinstance(exc, CliError):
        return exc
    failure = classify(exc)
    return None if failure is None else CliError(failure.message, failure.exit_code)


def run_group(group: click.Group, argv: Sequence[str] | None = None, *, prog_name: str | None = None) -> int:
    """Run a click group in-process; returns the exit code, with library errors turned into one line.
    ``prog_name``: the name usage lines show (default: click's, from ``sys.argv[0]``)."""
    try:
        args = list(argv) if argv is not None else None
        result = group.main(args=args, prog_name=prog_name, standalone_mode=False)
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
