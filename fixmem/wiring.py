"""Composition: settings in, clients, stores, consumer and worker configurations out.

Every process builds its parts here, so all writers of a data directory use the same kind of project
lock (a Redis lease around the flock every write takes, or the flock alone), and every Redis client has
timeouts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fixmem.errors import CliError, ExitCode, RedisUnavailable
from fixmem.settings import Settings, default_data_dir

# The parts below are imported where they are built, not here: `fixmem recall` needs the store only,
# `fixmem status` a Redis client only (redis-py, the consumer, the workers and RQ are costly imports).
if TYPE_CHECKING:
    import redis
    from _typeshed import DataclassInstance

    from ingest.consumer import ConsumerConfig
    from ingest.status import PipelineStatus
    from store import FixStore, LockFactory
    from workers.jobs import WorkerContext
    from workers.worker import WorkerOptions

log = logging.getLogger("fixmem.wiring")

C = TypeVar("C", bound="DataclassInstance")

RUNTIME_URL_FILE = "redis/url"  # under the data dir: where `fixmem up` says its embedded Redis listens


def runtime_url_path(data_dir: Path) -> Path:
    """The file in which a running ``fixmem up`` publishes its embedded Redis URL."""
    return data_dir / RUNTIME_URL_FILE


def resolve_redis_url(settings: Settings) -> str | None:
    """``FIXMEM_REDIS_URL`` if set, else the URL a running ``fixmem up`` published, else None."""
    if settings.redis_url:
        return settings.redis_url
    try:
        url = runtime_url_path(settings.data_dir).read_text().strip()
    except OSError:
        return None
    return url or None


def redis_client(settings: Settings, *, ping: bool = True, check_version: bool = False) -> redis.Redis:
    """A client for the configured Redis, checked with PING unless ``ping`` is False.

    ``check_version``: also refuse a server older than ``MIN_REDIS_VERSION`` (the long-running commands).
    Raises RedisUnavailable (exit 69) naming the URL when there is none or it does not answer, and CliError
    (exit 69) when it is too old.
    """
    import redis  # noqa: PLC0415

    from ingest.connection import REDIS_DOWN, connect  # noqa: PLC0415

    url = resolve_redis_url(settings)
    if url is None:
        raise _no_redis(settings)
    try:
        client = connect(url, timeout=settings.redis_timeout_seconds)
    except ValueError as exc:
        raise _unreachable(settings, url, f"not a Redis URL: {exc}") from exc
    if ping:
        try:
            client.ping()
        except REDIS_DOWN as exc:
            raise _unreachable(settings, url, str(exc) or type(exc).__name__) from exc
        except redis.exceptions.AuthenticationError as exc:
            raise _unreachable(settings, url, f"authentication failed: {exc}") from exc
    if check_version:
        require_supported_version(client, url)
    return client


def _no_redis(settings: Settings) -> RedisUnavailable:
    """No URL at all: say which data directory was looked in, and name a ``fixmem up`` that runs with the
    default one when that is another (the usual cause: a command given another data directory)."""
    url_file = runtime_url_path(settings.data_dir)
    elsewhere = ""
    default = default_data_dir(os.environ)
    if default.expanduser() != settings.data_dir:
        with contextlib.suppress(OSError):
            other = runtime_url_path(default).read_text().strip()
            if other:
                elsewhere = f" (a `fixmem up` published {other} for data dir {default}: use that data dir)"
    return RedisUnavailable(
        "(none)",
        "FIXMEM_REDIS_URL is unset and no `fixmem up` has published a Redis for data dir "
        f"{settings.data_dir} (no {url_file}){elsewhere}",
        advice="Start `fixmem up` with this data dir, or pass the data dir yours runs with (FIXMEM_DATA_DIR, "
        "--data-dir), or set FIXMEM_REDIS_URL.",
    )


def _unreachable(settings: Settings, url: str, detail: str) -> RedisUnavailable:
    """``url`` does not answer: say where the URL came from, and what to do about that source."""
    if settings.redis_url:
        return RedisUnavailable(
            url,
            detail,
            origin="FIXMEM_REDIS_URL / --redis-url",
            advice="Check that server, or unset FIXMEM_REDIS_URL to use the Redis of a running `fixmem up` "
            f"(it publishes its URL in {runtime_url_path(settings.data_dir)}).",
        )
    url_file = runtime_url_path(settings.data_dir)
    return RedisUnavailable(
        url,
        detail,
        origin=f"read from {url_file}, written by the `fixmem up` of data dir {settings.data_dir}",
        advice="That `fixmem up` has stopped or its Redis crashed: start `fixmem up` again (or see its "
        f"log, {settings.data_dir / 'redis' / 'redis.log'}).",
    )


def require_supported_version(client: redis.Redis, url: str) -> None:
    """Refuse a Redis older than ``MIN_REDIS_VERSION``: raises CliError (exit 69) naming its version.

    A server whose ``INFO`` is disabled (some managed services rename it) is let through with a warning.
    """
    import redis  # noqa: PLC0415

    from fixmem.runtime.redis_server import MIN_REDIS_VERSION, version_supported  # noqa: PLC0415

    try:
        version = str(client.info("server").get("redis_version", ""))
    except redis.exceptions.ResponseError as exc:
        log.warning("cannot read the version of the Redis at %s (%s): assuming >= 6.2", url, exc)
        return
    if not version_supported(version):
        needed = ".".join(map(str, MIN_REDIS_VERSION))
        raise CliError(
            f"the Redis at {url} is version {version or '(none reported)'}: fixmem needs Redis >= {needed} "
            "(XPENDING IDLE, LMOVE, XTRIM MINID). Upgrade it, or unset FIXMEM_REDIS_URL so that "
            "`fixmem up` starts its embedded Redis.",
            ExitCode.REDIS_UNAVAILABLE,
        )


def lock_factory(settings: Settings, client: redis.Redis | None) -> LockFactory | None:
    """The project lock all writers use around the store's flock: a Redis lease (``store_lock=redis``),
    else none (the flock alone)."""
    if settings.store_lock == "redis" and client is not None:
        from workers.locks import redis_lock_factory  # noqa: PLC0415

        return redis_lock_factory(client, lease=settings.lock_lease_seconds, wait=settings.lock_wait_seconds)
    return None


# (absolute data dir, cap, slack) -> the store reading commands share, in a process that keeps them
_kept_readers: dict[tuple[str, int, int, bool, bool], FixStore] | None = None


def keep_reading_stores() -> None:
    """From now on ``make_store(settings, None)`` returns one store per data dir, cap and slack: a
    long-lived process answering many commands (the recall daemon) keeps their parse caches warm."""
    global _kept_readers  # noqa: PLW0603 - one switch per process, set once by the daemon
    if _kept_readers is None:
        _kept_readers = {}


def make_store(settings: Settings, client: redis.Redis | None) -> FixStore:
    """The FixStore of ``settings.data_dir`` with the configured lock (pass the client for Redis locks);
    after ``keep_reading_stores``, a kept one when no client is given (an absolute data dir)."""
    from store import FixStore  # noqa: PLC0415
    from store.meaning import shared_meaning  # noqa: PLC0415

    key = (
        str(settings.data_dir),
        settings.rotation_cap,
        settings.rotation_slack,
        settings.learn_from_use,
        settings.meaning,
    )
    kept = _kept_readers if client is None and settings.data_dir.is_absolute() else None
    if kept is not None and key in kept:
        return kept[key]
    store = FixStore(
        settings.data_dir,
        cap=settings.rotation_cap,
        slack=settings.rotation_slack,
        lock_factory=lock_factory(settings, client),
        learn_from_use=settings.learn_from_use,
        meaning=shared_meaning() if settings.meaning else None,
    )
    if kept is not None:
        kept[key] = store
    return store


def library_store(settings: Settings) -> FixStore:
    """The store of the in-process Python API (``FixMemory``): the settings' cap and slack, and the Redis
    lease lock of the workers when ``store_lock=redis`` and ``FIXMEM_REDIS_URL`` names their Redis (not
    contacted until a write takes the lock); else the flock every write takes."""
    wants_redis = settings.store_lock == "redis" and bool(settings.redis_url)
    return make_store(settings, redis_client(settings, ping=False) if wants_redis else None)


def writer_store(settings: Settings) -> FixStore:
    """The store for a command that writes (``forget``, ``import``): the workers' lock kind.

    With ``store_lock=redis`` and a Redis known (``FIXMEM_REDIS_URL`` or a running ``fixmem up``), it
    takes the project's Redis lease lock like the workers; raises RedisUnavailable (exit 69) when that
    Redis does not answer. With no Redis known no worker holds a lease here, and the flock every write
    takes excludes the local writers.
    """
    wants_redis = settings.store_lock == "redis" and resolve_redis_url(settings) is not None
    return make_store(settings, redis_client(settings) if wants_redis else None)


def consumer_name(settings: Settings, index: int | None = None) -> str:
    """A stable consumer name: the setting, else the host name (plus ``-<index>`` under ``fixmem up``)."""
    base = settings.consumer_name or socket.gethostname()
    return base if index is None else f"{base}-{index}"


def setting_fields(config: type[DataclassInstance]) -> frozenset[str]:
    """The fields of the library configuration ``config`` that are named like a setting (and come from it)."""
    return frozenset(f.name for f in dataclasses.fields(config) if f.init and f.name in Settings.model_fields)


def from_settings(config: type[C], settings: Settings, **given: Any) -> C:
    """``config(**given)`` with every other field named like a setting taken from ``settings``.

    ``ingest`` and ``workers`` cannot import the settings, so their configurations take required values
    named like the settings (which hold the defaults and their reasons), and each field is named once.
    Raises TypeError when a required field is neither given nor a setting.
    """
    taken = {name: getattr(settings, name) for name in setting_fields(config) - given.keys()}
    return config(**taken, **given)


def consumer_config(settings: Settings, *, name: str | None = None) -> ConsumerConfig:
    """The consumer's configuration: live stream first, then backfill."""
    from ingest.consumer import ConsumerConfig, Route  # noqa: PLC0415

    routes = (
        Route(settings.stream, settings.live_queue, "live", by_project=False),
        Route(
            settings.backfill_stream,
            settings.backfill_queue,
            "backfill",
            by_project=False,
            job_max_events=settings.backfill_job_max_events,
        ),
    )
    return from_settings(ConsumerConfig, settings, routes=routes, consumer=name or consumer_name(settings))


def worker_options(settings: Settings, *, name: str | None = None) -> WorkerOptions:
    """The worker's configuration: live queue first, then backfill."""
    from workers.worker import WorkerOptions  # noqa: PLC0415

    return from_settings(
        WorkerOptions, settings, queues=(settings.live_queue, settings.backfill_queue), name=name
    )


def pipeline_status(client: redis.Redis, settings: Settings) -> PipelineStatus:
    """The live and backfill streams, their queues and the dead letters that ``settings`` name, as
    `fixmem status` and the web UI's pipeline page show them. Raises redis.exceptions.RedisError."""
    from ingest.status import pipeline_status as read  # noqa: PLC0415 (status needs no Redis imports)

    return read(
        client,
        streams=[settings.stream, settings.backfill_stream],
        group=settings.group,
        queues=[settings.live_queue, settings.backfill_queue],
        dead_stream=settings.dead_stream,
        alive_within=settings.job_lease_seconds,
    )


def worker_context(
    settings: Settings, client: redis.Redis, *, name: str = "worker", store: FixStore | None = None
) -> WorkerContext:
    """What ``process_batch`` needs in this process (``store``: default the settings' with their lock)."""
    from workers.jobs import WorkerContext  # noqa: PLC0415

    return from_settings(
        WorkerContext, settings, client=client, store=store or make_store(settings, client), name=name
    )
