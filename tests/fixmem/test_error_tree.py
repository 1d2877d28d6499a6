"""The error tree: every failure is classified once (``fixmem.errors.classify``), and each category
answers alike on every surface: exit code, HTTP status, tool error."""

from __future__ import annotations

import pytest
import redis as _redis
from fastapi import HTTPException

from fixmem import errors as _errors
from fixmem.api.app import store_errors
from fixmem.mcp.tool import ToolArgsError as _ToolArgsError
from fixmem.settings import SettingsError as _SettingsError
from ingest.errors import DeadLetterReason
from ingest.errors import InvalidEvent as _InvalidEvent
from store.errors import InvalidKey as _InvalidKey
from store.errors import StoreUnavailable as _StoreUnavailable
from workers.errors import LockLost as _LockLost
from workers.errors import LockTimeout as _LockTimeout


@pytest.mark.parametrize(
    ("exc", "category", "exit_code", "status"),
    [
        (_ToolArgsError("k: too big"), _errors.InvalidInput, _errors.ExitCode.DATA_ERROR, 422),
        (_SettingsError("FIXMEM_X: bad"), _errors.InvalidInput, _errors.ExitCode.CONFIG_ERROR, 422),
        (_InvalidKey("bad key"), _errors.InvalidInput, _errors.ExitCode.STORE_UNAVAILABLE, 422),
        (
            _InvalidEvent(next(iter(DeadLetterReason)), "owner is empty"),
            _errors.InvalidInput,
            _errors.ExitCode.DATA_ERROR,
            422,
        ),
        (_errors.NotFound("no entry"), _errors.NotFound, _errors.ExitCode.NOT_FOUND, 404),
        (
            _StoreUnavailable("/data", "disk full"),
            _errors.Unavailable,
            _errors.ExitCode.STORE_UNAVAILABLE,
            503,
        ),
        (
            _redis.exceptions.ConnectionError("x"),
            _errors.Unavailable,
            _errors.ExitCode.REDIS_UNAVAILABLE,
            503,
        ),
        (
            _redis.exceptions.OutOfMemoryError("oom"),
            _errors.Unavailable,
            _errors.ExitCode.REDIS_UNAVAILABLE,
            503,
        ),
        (_LockTimeout("held"), _errors.Busy, _errors.ExitCode.TIMEOUT, 503),
        (_LockLost("lost"), _errors.Busy, _errors.ExitCode.TIMEOUT, 503),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None,
)
def test_one_table_classifies_each_failure(
    exc: BaseException, category: type[Exception], exit_code: int, status: int
) -> None:
    failure = _errors.classify(exc)
    assert failure is not None
    assert (failure.category, failure.exit_code, failure.http_status) == (category, exit_code, status)
    cli = _errors.translate(exc)
    assert cli is not None and cli.exit_code == exit_code
    if category is _errors.InvalidInput:
        assert failure.public == failure.message  # the caller's input: they read why
    else:
        assert str(exc) not in failure.public or failure.public == _errors.RESPONSES[category].public


def test_a_bug_is_not_classified() -> None:
    assert _errors.classify(KeyError("a bug")) is None
    assert _errors.translate(KeyError("a bug")) is None


def test_the_http_api_answers_by_the_same_table() -> None:
    for exc, status in ((_LockTimeout("held"), 503), (_InvalidKey("k"), 422), (_errors.NotFound("x"), 404)):
        with pytest.raises(HTTPException) as raised, store_errors():
            raise exc
        assert raised.value.status_code == status
