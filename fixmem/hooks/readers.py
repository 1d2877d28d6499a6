"""Which reader a hook (or the harness adapter) recalls through: the HTTP API, the local recall daemon,
or the store in-process (the readers: ``fixmem.hooks.reader``; the daemon's client:
``fixmem.hooks.daemon_client``, which builds on the former, so the choice lives here, above both).

Standard library only at import time, as the rest of the hooks' fast path (``fixmem/hooks/config.py``).
"""

from __future__ import annotations

from fixmem.hooks.config import HookConfig
from fixmem.hooks.reader import LocalReader, Reader, RemoteReader

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from fixmem.hooks.reader import Localizer


def reader_for(config: HookConfig, *, in_process: bool = False, wait_cold: bool = False) -> Reader:
    """The remote reader when the API URL and token are set; else the local daemon's client (``wait_cold``:
    wait for a starting daemon), or the store in-process when ``in_process`` (a long-lived caller) or the
    daemon is off (``FIXMEM_HOOK_DAEMON_IDLE_SECONDS=0``)."""
    if config.remote and config.api_url and config.api_token:
        localizer = localizer_for(config, long_lived=in_process)
        return RemoteReader(
            config.api_url, config.api_token, timeout=config.timeout_seconds, k=config.k, localizer=localizer
        )
    if in_process or config.daemon_idle_seconds <= 0:
        return LocalReader(config)
    from fixmem.hooks.daemon_client import DaemonReader  # noqa: PLC0415 - socket, fcntl: only for it

    return DaemonReader(config, wait_cold=wait_cold)


def localizer_for(config: HookConfig, *, long_lived: bool) -> Localizer | None:
    """How a remote reader localizes a task in its checkout (the server cannot see it); None when
    ``FIXMEM_LOCALIZE`` is off. ``long_lived`` (the harness adapter): the indexes are kept warm in this
    process (``fixmem.runtime.localize.keeper.Keeper``); else (a hook) the data directory's recall
    daemon keeps them warm and is asked (started when none runs: text only this time), or, with the
    daemon off, the cached index is read (``localize_now``: a missing one is built by a detached child
    for the next).
    Never raises."""
    if not config.localize:
        return None
    if long_lived:
        local = LocalReader(config)  # its keeper only: no store is loaded for localizing

        def kept(checkout: str, text: str) -> list[tuple[str, float, str]] | None:
            found = local.localized(checkout, text)
            return None if found is None else [(g.path, g.weight, g.why) for g in found]

        return kept

    def once(checkout: str, text: str) -> list[tuple[str, float, str]] | None:
        from fixmem.hooks.session import note_failure  # noqa: PLC0415

        try:
            if config.daemon_idle_seconds > 0:  # the daemon keeps the index warm
                from fixmem.hooks.daemon_client import localized_by_daemon  # noqa: PLC0415

                return localized_by_daemon(config, checkout, text)
            from fixmem.runtime.localize.keeper import localize_now  # noqa: PLC0415 - no daemon: the cached index

            found = localize_now(config.localize_dir, checkout, text)
        except Exception as exc:  # localization is a bonus: never the reason a recall fails
            note_failure(config.hooks_dir, "localize", f"{type(exc).__name__}: {exc}")
            return None
        return None if found is None else [(g.path, g.weight, g.why) for g in found]

    return once
