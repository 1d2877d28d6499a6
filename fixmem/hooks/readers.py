"""Which reader a hook (or the harness adapter) recalls through: the HTTP API, the local recall daemon,
or the store in-process (the readers: ``fixmem.hooks.reader``; the daemon's client:
``fixmem.hooks.daemon_client``, which builds on the former, so the choice lives here, above both).

Standard library only at import time, as the rest of the hooks' fast path (``fixmem/hooks/config.py``).
"""

from __future__ import annotations

from fixmem.hooks.config import HookConfig
from fixmem.hooks.reader import LocalReader, Reader, RemoteReader


def reader_for(config: HookConfig, *, in_process: bool = False, wait_cold: bool = False) -> Reader:
    """The remote reader when the API URL and token are set; else the local daemon's client (``wait_cold``:
    wait for a starting daemon), or the store in-process when ``in_process`` (a long-lived caller) or the
    daemon is off (``FIXMEM_HOOK_DAEMON_IDLE_SECONDS=0``)."""
    if config.remote and config.api_url and config.api_token:
        return RemoteReader(config.api_url, config.api_token, timeout=config.timeout_seconds, k=config.k)
    if in_process or config.daemon_idle_seconds <= 0:
        return LocalReader(config)
    from fixmem.hooks.daemon_client import DaemonReader  # noqa: PLC0415 - socket, fcntl: only for it

    return DaemonReader(config, wait_cold=wait_cold)
