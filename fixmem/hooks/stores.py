"""The hook processes' store factory: the store of the data directory with the mirrored settings.

The publisher and the recall daemon (and a harness recalling in-process) build their ``FixStore`` here,
from ``HookConfig`` (cap and slack mirror ``Settings``, checked by ``tests/fixmem/hooks/test_config.py``),
as ``fixmem.wiring.make_store`` builds every other store from ``Settings``. No Redis lease: the hooks
write locally only when no ``FIXMEM_REDIS_URL`` is set, and then no worker holds one (the flock every
write takes excludes the local writers), as ``wiring.writer_store`` decides for the CLI. Not on the
hooks' fast path: importing this module loads the store (numpy, pydantic).
"""

from __future__ import annotations

from fixmem.hooks.config import HookConfig
from store import FixStore
from store.meaning import shared_meaning


def local_store(config: HookConfig) -> FixStore:
    """The store under ``config.data_dir`` with the configured rotation cap and slack, learning from use
    when ``FIXMEM_LEARN_FROM_USE`` is on, with the meaning signal when ``FIXMEM_MEANING`` is on and the
    extra is installed."""
    return FixStore(
        config.data_dir,
        cap=config.rotation_cap,
        slack=config.rotation_slack,
        learn_from_use=config.learn_from_use,
        meaning=shared_meaning() if config.meaning else None,
    )
