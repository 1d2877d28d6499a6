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

A long task text shares many words with everything, so J and C (shares of the *query*) fall under
``min_score`` for a 600-word issue however related the fix. A second, length-robust way in is the
*evidence* (issue [recall-task]), in units of a distinctive word (the idf of a word one entry holds,
``u = idf(n, 1)``, so it means the same at 10 and at 500 entries)::

    evidence = (W + evidence_code·K) / u  /  max(Q / u, 1) ** evidence_length_power

    W   summed IDF of the query's words the entry holds (absolute, not a share)  (store.recall.index)
    K   summed IDF of the code keys the entry's files and symbols share with the names, paths and
        frames the query mentions                                              (store.recall.code)
    Q   the query's IDF mass (a word no entry holds at the highest IDF): chance matches grow with it,
        so the evidence is damped by a low power; words the project never saw damp it too, which keeps
        another project's text quiet (counting only known words lost 7 of 58 hits on tune at a floor
        that keeps the off-topic probes quiet: docs/decisions/0007-recall-at-task-start.md)

The *strength* of an entry is ``max(relevance / min_score, evidence / evidence_floor)``: 1 or more on
either scale is relevant. ``evidence_floor`` sits just above the best evidence any off-topic probe of
evals/related's tuning half reaches (another repository's task text asked of this one), so those
abstain at any length. When the query names files, an entry that touched none of them is not returned
(mid-task, the files being edited are the strongest signal), and the files' IDF mass it shares is added
to its strength. Files the task was *localized* to (``store.localize``: the checkout's files its text
names) count the same way weighted by how sure the localization is; in that workspace mode a fix that
touched no trusted localized file must be strong on its own (``RankingWeights.localized_*``).

When recall learns from use (``store.usage``), each entry's strength is first multiplied by its factor,
in a small range around 1. An entry is returned only if it is live (not superseded) and its strength is
at least 1: a query about
something the project never saw returns nothing. Survivors are ordered by
``strength × outcome factor × (regressed_factor if the fix regressed) × recency decay`` (the decay is off
by default), and exact ties go to the newer entry. A strength of ``close_strength`` or more (or the same
error signature) is "closely related"; the rest is "possibly related". Once something passed the floor,
the runner-up (the second strongest entry) is returned too, as possibly related, when its strength is
at least ``runner_up_floor`` and ``runner_up_ratio`` of the best's. With the meaning signal (the
optional ``meaning`` extra: a cosine per entry passed in, ``store.meaning``), a text-only query that
passes nothing over the floor may still get the few strongest fixes just under it whose request means
what the query says (``RankingWeights.meaning_*``).
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
    before/after figures are in docs/decisions/0005-recall-evaluation.md. Change them only with the
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
    # Evidence (issue [recall-task]; set on evals/related's tuning half,
    # docs/decisions/0007-recall-at-task-start.md): a shared code key weighs this many times a shared
    # word of the same IDF ...
    evidence_code: float = 2.0
    evidence_code_words: float = 2.0  # ... and a plain word found as a path segment (``linker/``) this much
    # ... the sum is damped by the query's IDF mass to this power (0: absolute, 1: a share) ...
    evidence_length_power: float = 0.25
    # ... and an entry is relevant at this much (units of a distinctive word), just above the best
    # off-topic probe of the tuning half.
    evidence_floor: float = 3.52
    # A shared file of IDF ``u`` adds this much evidence (alone, 0.85 of the floor: not enough) ...
    evidence_files: float = 3.0
    # ... and when the query names files, a fix that touched none of them needs this strength.
    untouched_strength: float = 2.0
    close_strength: float = 1.5  # strength from which a fix is "closely related"
    floor: float = 1.0  # the strength an entry needs to be returned (0: no floor, a diagnostic)
    # Once a fix passed the floor, the next strongest one is returned too ("possibly related") when its
    # strength is at least ``runner_up_floor`` and ``runner_up_ratio`` of the best's (0: off). Set on
    # evals/related's tuning half (docs/decisions/0026-task-start-runner-up.md).
    # BM25 length normalisation of the shared words' IDF in the evidence (b; 0: off) and its k1. Measured
    # on the tuning half, not shipped (docs/decisions/0026-task-start-runner-up.md).
    evidence_bm25_b: float = 0.0
    evidence_bm25_k1: float = 1.2
    runner_up_floor: float = 0.8
    runner_up_ratio: float = 0.7
    # The meaning signal (the optional ``meaning`` extra, ``store.meaning``; set on evals/related's tuning
    # half, docs/decisions/0062-meaning-signal-rescue.md): when a text-only query passes no fix over the
    # floor, up to ``meaning_count`` of the ``meaning_candidates`` strongest fixes are returned when
    # their strength is at least ``meaning_strength`` and the cosine of their request's embedding with
    # the query's reaches ``meaning_cosine``.
    meaning_strength: float = 0.7
    meaning_cosine: float = 0.6
    meaning_count: float = 2.0
    meaning_candidates: float = 10.0
    # Localized files (issue 32: the files of the checkout the task text names, ``store.localize``;
    # set on evals/related's tuning half, docs/decisions/0067-localization.md): a fix that touched a
    # localized file of weight ``w`` and IDF ``i`` gains ``localized_files · w · i / u`` evidence, added
    # to its strength (a known file's ``evidence_files · i / u`` only competes with the text's) ...
    localized_files: float = 6.0
    localized_min_weight: float = 0.5  # a localized file weighing less is ignored (too unsure to use)
    # ... and in workspace mode (recall given the localized files, maybe none), a fix that touched no
    # localized file of ``localized_trust`` or more needs this strength (as ``untouched_strength`` when
    # files are known; 0: no such gate).
    localized_trust: float = 0.7
    localized_untouched: float = 1.25
    # ... and when no localized file is trusted (the localizer was unsure, or found nothing), every fix
    # needs this strength (1: the text floor).
    localized_unsure: float = 1.5

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
    words: FloatArray | None = None  # W: summed IDF of shared words (None: no evidence signal)
    code: FloatArray | None = None  # K: summed IDF of shared code keys of the names and paths
    code_words: FloatArray | None = None  # ... of the plain words (looked up as path segments)
    file_mass: FloatArray | None = None  # summed IDF of the query's files each entry touched
    query_weight: float = 0.0  # Q: the query's IDF mass
    unit: float = 1.0  # u: the idf of a word one entry holds
    files_asked: bool = False  # the query named files: an entry touching none of them is not returned
    localized_mass: FloatArray | None = None  # summed weight × IDF of the localized files each entry touched
    localized_gate: BoolArray | None = None  # touched a trusted localized file (None: no gate)
    localized_sure: bool = False  # some localized file was trusted


def relevance(signals: Signals, weights: RankingWeights = DEFAULT_WEIGHTS) -> FloatArray:
    """The blended relevance of every entry (the value compared with ``min_score``)."""
    return (
        weights.jaccard * signals.jaccard
        + weights.coverage * signals.coverage
        + weights.files * signals.files
        + weights.errors * signals.errors
        + weights.vector * np.maximum(signals.cosine, 0.0)
    )


def evidence(signals: Signals, weights: RankingWeights = DEFAULT_WEIGHTS) -> FloatArray:
    """The length-robust evidence of every entry, in units of a distinctive word (module docstring)."""
    if signals.words is None:
        return np.zeros_like(signals.jaccard)
    code = signals.code if signals.code is not None else 0.0
    words_as_code = signals.code_words if signals.code_words is not None else 0.0
    unit = max(signals.unit, 1e-9)
    damp = max(signals.query_weight / unit, 1.0) ** weights.evidence_length_power
    found = signals.words + weights.evidence_code * code + weights.evidence_code_words * words_as_code
    result: FloatArray = found / unit / damp
    return result


def strength(signals: Signals, weights: RankingWeights = DEFAULT_WEIGHTS) -> FloatArray:
    """How relevant each entry is on one scale: 1 or more is relevant (module docstring)."""
    rel = relevance(signals, weights)
    ratio = np.maximum(rel, 0.0) / max(weights.min_score, 1e-9)
    # exact at the floor: relevance >= min_score is strength >= 1, whatever the division rounds to
    value = np.where(rel >= weights.min_score, np.maximum(ratio, 1.0), np.minimum(ratio, 1.0 - 1e-12))
    touched = signals.file_mass if signals.files_asked and signals.file_mass is not None else None
    if weights.evidence_floor > 0:
        found = evidence(signals, weights)
        if touched is not None:
            found = found + weights.evidence_files * touched / max(signals.unit, 1e-9)
        value = np.maximum(value, found / weights.evidence_floor)
        if signals.localized_mass is not None:  # added to the strength: it raises the order too
            value = (
                value
                + weights.localized_files * signals.localized_mass / signals.unit / weights.evidence_floor
            )
    if touched is not None:  # files named: a fix that touched none of them must be close on its own
        value = np.where((touched > 0) | (value >= weights.untouched_strength), value, 0.0)
    elif signals.localized_gate is not None:
        need = weights.localized_untouched if signals.localized_sure else weights.localized_unsure
        value = np.where(signals.localized_gate | (value >= need), value, 0.0)
    return value


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
    factors: FloatArray | None = None,
    meaning: FloatArray | None = None,
) -> list[tuple[int, float]]:
    """The top ``k`` relevant live entries as ``(row, score)``, best first; ``[]`` when none is relevant.

    ``factors``: a multiplier per entry on its strength, before the floor (``store.usage``: learned from
    use; None: none). ``meaning``: the cosine per entry of its request's embedding with the query's
    (None: no meaning signal); when no entry passes the floor, ``_rescued`` may answer with it."""
    if k <= 0 or ts.size == 0:
        return []
    value = strength(signals, weights)
    if factors is not None:
        value = value * factors
    usable = live & np.isfinite(value)
    eligible = np.flatnonzero(usable & (value >= weights.floor))
    if eligible.size == 0 and meaning is not None:
        eligible = _rescued(value, usable, ts, meaning, weights)
    elif eligible.size and weights.runner_up_floor > 0 and weights.floor > 0:
        eligible = _with_runner_up(value, usable, eligible, weights)
    if eligible.size == 0:
        return []
    score = value[eligible] * weights.outcome_factors()[outcome_codes[eligible]]
    score = np.where(regressed[eligible], score * weights.regressed_factor, score)
    if weights.recency_half_life_days:
        age_days = np.maximum(now - ts[eligible], 0.0) / 86_400.0
        score = score * np.exp2(-age_days / weights.recency_half_life_days)
    score = np.round(score, 9)  # float noise must not beat recency on a tie
    order = np.lexsort((-ts[eligible], -score))[:k]
    return [(int(eligible[i]), float(score[i])) for i in order if math.isfinite(score[i])]


def _with_runner_up(
    value: FloatArray, usable: BoolArray, eligible: IntArray, weights: RankingWeights
) -> IntArray:
    """``eligible`` plus the second strongest usable entry when it is below the floor but close to the
    strongest (``RankingWeights.runner_up_floor`` and ``runner_up_ratio``)."""
    candidates = np.flatnonzero(usable)
    if candidates.size < 2:
        return eligible
    # the two strongest, ties to the later row (the newer entry), as the final order breaks them
    top = candidates[np.lexsort((-candidates, -value[candidates]))[:2]]
    best, second = float(value[top[0]]), float(value[top[1]])
    floor = max(weights.runner_up_floor * weights.floor, weights.runner_up_ratio * best)
    if second < weights.floor and second >= floor:
        return np.append(eligible, top[1])
    return eligible


def _rescued(
    value: FloatArray, usable: BoolArray, ts: FloatArray, meaning: FloatArray, weights: RankingWeights
) -> IntArray:
    """Of the ``meaning_candidates`` strongest usable entries (ties to the newer), up to
    ``meaning_count`` whose strength is at least ``meaning_strength`` and whose cosine reaches
    ``meaning_cosine``: the meaning signal's answer when nothing passed the floor."""
    candidates = np.flatnonzero(usable)
    top = candidates[np.lexsort((-ts[candidates], -value[candidates]))][: int(weights.meaning_candidates)]
    keep = top[(value[top] >= weights.meaning_strength) & (meaning[top] >= weights.meaning_cosine)]
    result: IntArray = keep[: int(weights.meaning_count)]
    return result
