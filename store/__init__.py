"""The per-project JSONL fix log: append, rotation, index, recall, prompt block, stats, forget.

A library with no Redis in it; it imports neither ``ingest`` nor ``workers``. Start at ``FixStore``
(``store.api``). ``store.recall`` is recall, pure (tokenize, lexicon, index, vectors, signatures, view,
ranking, search, prompt); ``store.persist`` is the file I/O (fixlog, fsio, rotation, forgotten, export);
``store.errorsig`` is the error signatures extraction and recall share; ``store.notes`` the project
notes. The other pure cores are ``entry``, ``history``, ``reconcile``, ``redact``, ``staleness``,
``paths`` and ``stats``.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from store.api import AppendResult, FixStore, LockFactory, ReadResult
    from store.entry import OUTCOMES, FixEntry, Outcome, TestRun, entry_id
    from store.errors import InvalidEntry, InvalidKey, StoreError, StoreUnavailable
    from store.history import RegressionRule
    from store.paths import normalize_path
    from store.persist.fixlog import MalformedLine
    from store.persist.rotation import RotationPlan, plan_rotation
    from store.recall.code import fit_query
    from store.recall.prompt import estimate_tokens, prompt_block
    from store.recall.ranking import DEFAULT_WEIGHTS, RankingWeights
    from store.recall.search import Recalled
    from store.recall.tokenize import tokenize
    from store.stats import Stats


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
    "MalformedLine": "store.persist.fixlog",
    "normalize_path": "store.paths",
    "estimate_tokens": "store.recall.prompt", "prompt_block": "store.recall.prompt",
    "DEFAULT_WEIGHTS": "store.recall.ranking", "RankingWeights": "store.recall.ranking",
    "Recalled": "store.recall.search",
    "fit_query": "store.recall.code",
    "RotationPlan": "store.persist.rotation", "plan_rotation": "store.persist.rotation",
    "Stats": "store.stats",
    "tokenize": "store.recall.tokenize",
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
    "MalformedLine",
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
    "fit_query",
    "normalize_path",
    "plan_rotation",
    "prompt_block",
    "tokenize",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'store' has no attribute {name!r}")
