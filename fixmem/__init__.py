"""fixmem: fix memory for coding agents. The composition root: CLI, settings and wiring.

The documented Python API::

    from fixmem import FixMemory
    memory = FixMemory(data_dir="/var/lib/fixmem")
    entry = memory.record_from_turn("alice", project_key="/home/u/app", user_message="…", tool_events=[…])
    block = memory.prompt_block(memory.recall("alice", "/home/u/app", "fix the login timeout"))

or the same as module functions on a memory built from the environment (``FIXMEM_DATA_DIR`` …):
``fixmem.record_from_turn``, ``fixmem.recall``, ``fixmem.prompt_block``, ``fixmem.stats``, ``fixmem.forget``.

The names are imported on first use (``fixmem.memory`` loads the store and numpy), so that the
``fixmem`` command, whose modules live in this package, starts without them.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the hooks import this package
if TYPE_CHECKING:
    from typing import Any

    from fixmem.memory import FixMemory, forget, prompt_block, recall, record_from_turn, stats

__all__ = ["FixMemory", "forget", "prompt_block", "recall", "record_from_turn", "stats"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("fixmem.memory"), name)
    raise AttributeError(f"module 'fixmem' has no attribute {name!r}")
