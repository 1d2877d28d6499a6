"""The per-project JSONL fix log: append, rotation, index, recall, prompt block, stats, forget.

A library with no Redis in it; it imports neither ``ingest`` nor ``workers``. Start at ``FixStore``
(``store.api``). ``store.recall`` is recall, pure (tokenize, lexicon, index, vectors, signatures, view,
ranking, search, prompt); ``store.persist`` is the file I/O (fixlog, fsio, rotation, forgotten, export);
``store.errorsig`` is the error signatures extraction and recall share; ``store.notes`` the project
notes. The other pure cores are ``entry``, ``history``, ``reconcile``, ``redact``, ``staleness``,
``paths`` and ``stats``.
"""

from store.api import AppendResult, FixStore, LockFactory, ReadResult
from store.entry import OUTCOMES, FixEntry, Outcome, TestRun, entry_id
from store.errors import InvalidEntry, InvalidKey, StoreError, StoreUnavailable
from store.history import RegressionRule
from store.paths import normalize_path
from store.persist.fixlog import MalformedLine
from store.persist.rotation import RotationPlan, plan_rotation
from store.recall.prompt import estimate_tokens, prompt_block
from store.recall.ranking import DEFAULT_WEIGHTS, RankingWeights
from store.recall.search import Recalled
from store.recall.tokenize import tokenize
from store.stats import Stats

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
    "normalize_path",
    "plan_rotation",
    "prompt_block",
    "tokenize",
]
