"""The per-project JSONL fix log: append, rotation, index, recall, prompt block, stats, forget.

A library with no Redis in it; it imports neither ``ingest`` nor ``workers``. Start at ``FixStore``
(``store.api``); the pure cores are ``tokenize``, ``vectors``, ``index``, ``ranking``, ``reconcile``,
``history``, ``rotation``, ``staleness``, ``prompt`` and ``stats``; the file I/O is in ``log`` and ``fsio``.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from store.api import AppendResult, FixStore, LockFactory, ReadResult
    from store.entry import OUTCOMES, FixEntry, Outcome, TestRun, entry_id
    from store.errors import InvalidEntry, InvalidKey, StoreError, StoreUnavailable
    from store.history import RegressionRule
    from store.log import Malformed
    from store.paths import normalize_path
    from store.prompt import estimate_tokens, prompt_block
    from store.ranking import DEFAULT_WEIGHTS, RankingWeights
    from store.recall import Recalled
    from store.rotation import RotationPlan, plan_rotation
    from store.stats import Stats

# Bound now: importing the submodule store.tokenize would otherwise leave the module under this name.
from store.tokenize import tokenize

# Where each name lives: imported on first use, so that importing one module of the store (``store.errors``,
# ``store.entry``) does not load them all (``store.ranking`` and ``store.vectors`` load numpy).
_HOMES = {
    "AppendResult": "store.api", "FixStore": "store.api", "LockFactory": "store.api",
    "ReadResult": "store.api",
    "OUTCOMES": "store.entry", "FixEntry": "store.entry", "Outcome": "store.entry", "TestRun": "store.entry",
    "entry_id": "store.entry",
    "InvalidEntry": "store.errors", "InvalidKey": "store.errors", "StoreError": "store.errors",
    "StoreUnavailable": "store.errors",
    "RegressionRule": "store.history",
    "Malformed": "store.log",
    "normalize_path": "store.paths",
    "estimate_tokens": "store.prompt", "prompt_block": "store.prompt",
    "DEFAULT_WEIGHTS": "store.ranking", "RankingWeights": "store.ranking",
    "Recalled": "store.recall",
    "RotationPlan": "store.rotation", "plan_rotation": "store.rotation",
    "Stats": "store.stats",
}  # fmt: skip

__all__ = [
    "DEFAULT_WEIGHTS",
    "OUTCOMES",
    "AppendResult",
    "FixEntry",
    "FixStore",
    "InvalidEntry",
    "InvalidKey",
    "LockFactory",
    "Malformed",
    "Outcome",
    "RankingWeights",
    "ReadResult",
    "Recalled",
    "RegressionRule",
    "RotationPlan",
    "Stats",
    "StoreError",
    "StoreUnavailable",
    "TestRun",
    "entry_id",
    "estimate_tokens",
    "normalize_path",
    "plan_rotation",
    "prompt_block",
    "tokenize",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'store' has no attribute {name!r}")
