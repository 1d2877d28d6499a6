"""Recall ranking: how relevant each entry is to a query, and when to return nothing. Pure, vectorized.

All the knobs live in ``RankingWeights`` (frozen, with documented defaults) so the evaluation issue can
tune them with a labelled set and pass them in. The score of entry *e* for query *q*::

    relevance = jaccard·J + coverage·C + files·F + errors·E + vector·max(cos, 0)

    J   IDF-weighted Jaccard of query and entry keywords              (store.recall.index)
    C   IDF-weighted share of the query's keywords the entry holds, measured against a query weight
        of at least ``coverage_min_words`` distinctive words           (store.recall.index)
    F   share of the query's files the entry touched                  (paths normalized, 0 if none asked)
    E   1 for a shared error signature, ``error_type`` for the same error type only, else 0
    cos hashed-vector cosine of query and the entry's task + errors   (store.recall.vectors)

An entry is returned only if it is live (not superseded) and ``relevance >= min_score``: a query about
something the project never saw returns nothing. Survivors are ordered by
``relevance × outcome factor × (regressed_factor if the fix regressed) × recency decay`` (the decay is off
by default), and exact ties go to the newer entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

OUTCOME_CODES = {"fixed": 0, "partial": 1, "unverified": 2}


@dataclass(frozen=True)
class RankingWeights:
    """Weights and thresholds of recall ranking (see the module docstring for the formula).

    The first seven were set with the recall eval (``fixmem eval``, ``evals/tune_recall.py``: random
    search on the tuning half of the queries, the median of the best ten, checked on the held-out half);
    before/after figures are in docs/decisions.md under "Recall evaluation". Change them only with the
    eval's figures in hand.
    """

    jaccard: float = 0.864
    coverage: float = 0.702
    files: float = 0.328
    errors: float = 0.364
    error_type: float = 0.261  # share of ``errors`` given when only the error type matches
    vector: float = 0.394
    min_score: float = 0.465  # below this an entry is not relevant and is not returned
    # Coverage divides by max(the query's keyword IDF mass, this many times the idf of a word found in
    # one entry): a query of one common keyword ("fix the bug in the test" -> ``test``) cannot cover an
    # entry "completely". In units of a distinctive word, not nats, so that it means the same in a
    # project of 1 entry and of 500 (a fixed 6 nats left a one-entry project unable to recall anything).
    coverage_min_words: float = 2.0
    fixed_factor: float = 1.0
    partial_factor: float = 0.85
    unverified_factor: float = 0.75
    regressed_factor: float = 0.5  # a fix that did not hold sorts below fixes that held
    recency_half_life_days: float | None = None  # None: age does not change the order, only ties

    def outcome_factors(self) -> FloatArray:
        """Factor per outcome code (``OUTCOME_CODES`` order)."""
        return np.array([self.fixed_factor, self.partial_factor, self.unverified_factor])


DEFAULT_WEIGHTS = RankingWeights()


@dataclass(frozen=True)
class Signals:
    """Per-entry match signals for one query, each shaped ``(n,)`` and in 0..1."""

    jaccard: FloatArray
    coverage: FloatArray
    files: FloatArray
    errors: FloatArray
    cosine: FloatArray


def relevance(signals: Signals, weights: RankingWeights = DEFAULT_WEIGHTS) -> FloatArray:
    """The blended relevance of every entry (the value compared with ``min_score``)."""
    return (
        weights.jaccard * signals.jaccard
        + weights.coverage * signals.coverage
        + weights.files * signals.files
        + weights.errors * signals.errors
        + weights.vector * np.maximum(signals.cosine, 0.0)
    )


def rank(
    signals: Signals,
    *,
    live: BoolArray,
    outcome_codes: IntArray,
    regressed: BoolArray,
    ts: FloatArray,
    k: int,
    now: float,
    weights: RankingWeights = DEFAULT_WEIGHTS,
) -> list[tuple[int, float]]:
    """The top ``k`` relevant live entries as ``(row, score)``, best first; ``[]`` when none is relevant."""
    if k <= 0 or ts.size == 0:
        return []
    rel = relevance(signals, weights)
    eligible = np.flatnonzero(live & (rel >= weights.min_score))
    if eligible.size == 0:
        return []
    score = rel[eligible] * weights.outcome_factors()[outcome_codes[eligible]]
    score = np.where(regressed[eligible], score * weights.regressed_factor, score)
    if weights.recency_half_life_days:
        age_days = np.maximum(now - ts[eligible], 0.0) / 86_400.0
        score = score * np.exp2(-age_days / weights.recency_half_life_days)
    score = np.round(score, 9)  # float noise must not beat recency on a tie
    order = np.lexsort((-ts[eligible], -score))[:k]
    return [(int(eligible[i]), float(score[i])) for i in order if math.isfinite(score[i])]
