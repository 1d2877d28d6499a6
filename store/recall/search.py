"""Recall over one project's view: signals, ranking, abstention, redaction on the way out. Pure.

The file I/O (which view, from which log) is ``FixStore.recall``'s job; this module takes the view.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from store.entry import FixEntry
from store.localize import Localized
from store.recall.code import symbol_keys
from store.recall.localized import LocalizedRows, workspace_mode
from store.recall.ranking import DEFAULT_WEIGHTS, RankingWeights, Signals, rank, strength
from store.recall.tokenize import match_forms
from store.recall.view import ProjectView, QueryTerms, query_terms
from store.redact import redact
from store.staleness import stale_marks, workspace_checker
from store.usage import Learned, explain

Tier = Literal["closely related", "possibly related"]
CLOSE: Final[Tier] = "closely related"
POSSIBLE: Final[Tier] = "possibly related"
MAX_REASONS: Final = 3  # names, paths or words kept per kind


@dataclass(frozen=True)
class Reasons:
    """Why a fix was recalled: what it shares with the query, most distinctive first."""

    symbols: tuple[str, ...] = ()  # the fix's symbols the query names (``FieldSelection``)
    paths: tuple[str, ...] = ()  # directories and file stems of the fix the query names
    files: tuple[str, ...] = ()  # the query's files the fix touched
    error: str | None = None  # "same error" or "same error type"
    words: tuple[str, ...] = ()  # distinctive words both say
    use: str | None = None  # how it fared when injected before (``store.usage.explain``)
    meaning: str | None = None  # returned under the floor because its request means what the query says
    localized: str | None = None  # it touched a file the task was localized to, and why (``store.localize``)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {
            "symbols": list(self.symbols),
            "paths": list(self.paths),
            "files": list(self.files),
            "error": self.error,
            "words": list(self.words),
            "use": self.use,
            "meaning": self.meaning,
            "localized": self.localized,
        }

    def summary(self) -> str:
        """One short phrase: ``shares function FieldSelection; file cmd.go; words: linker, oxc``, then the
        fix's use when recall learns from it (``followed 3 of 5 times, sessions fixed``)."""
        parts = []
        if self.error:
            parts.append(self.error)
        if self.files:
            parts.append("file " + ", ".join(self.files))
        if self.symbols:
            parts.append("code " + ", ".join(self.symbols))
        if self.paths:
            parts.append("in " + ", ".join(self.paths))
        if self.words:
            parts.append("words: " + ", ".join(self.words))
        shared = "shares " + "; ".join(parts) if parts else ""
        return "; ".join(p for p in (shared, self.localized, self.meaning, self.use) if p)


@dataclass(frozen=True)
class Recalled:
    """One recalled fix: the entry (redacted again), its score, and what history and checks say of it."""

    entry: FixEntry
    score: float  # ranking score (strength × outcome and regression factors); higher is better
    regressed: bool  # a later partial entry showed this fix did not hold
    regressed_by: str | None = None  # id of that later entry
    stale: tuple[str, ...] = ()  # "stale: commit gone", "stale: file gone: …" (marked, never dropped)
    tier: Tier = CLOSE  # "closely related" or "possibly related" (``RankingWeights.close_strength``)
    reasons: Reasons = field(default_factory=Reasons)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {
            "entry": self.entry.model_dump(mode="json"),
            "score": self.score,
            "regressed": self.regressed,
            "regressed_by": self.regressed_by,
            "stale": list(self.stale),
            "tier": self.tier,
            "reasons": self.reasons.to_dict(),
        }


def recall_view(
    view: ProjectView,
    query: str,
    *,
    files: Sequence[str] | None = None,
    errors: Sequence[str] | None = None,
    k: int = 5,
    workspace: str | None = None,
    known_commits: Collection[str] | None = None,
    now: float,
    weights: RankingWeights = DEFAULT_WEIGHTS,
    file_exists_check: bool = True,
    learned: Learned | None = None,
    meaning: npt.NDArray[np.float64] | None = None,
    localized: Sequence[Localized] | None = None,
) -> list[Recalled]:
    """The ``k`` most relevant live entries of ``view`` for the query, best first (closely related ones
    before possibly related ones); ``[]`` if none is.

    With a ``workspace``, files are normalized against it and (if ``file_exists_check``) entries whose
    files are gone from it are marked stale. ``learned``: multipliers learned from use (``store.usage``),
    applied to the strength and said in the reasons. ``meaning``: the cosine per row of ``view`` of its
    request's embedding with the query's (``store.meaning``; only a text-only query uses it).
    ``localized``: workspace mode, the files the task was localized to in its checkout, maybe none
    (``store.recall.localized``); None: no checkout, text only.
    """
    if not view.entries or k <= 0:
        return []
    errors, paths = list(errors or ()), list(files or ())
    terms = query_terms(query, errors)
    signals = view.signals(terms, files=paths, errors=errors, workspace=workspace, weights=weights)
    signals, found = workspace_mode(
        view, signals, localized, workspace=workspace, weights=weights, known=paths
    )
    factors = None if learned is None else learned.factors
    live, codes, regressed = view.live, view.outcome_codes, view.regressed_mask
    ranked = rank(signals, live=live, outcome_codes=codes, regressed=regressed, ts=view.ts, k=k, now=now,
                  weights=weights, factors=factors,
                  meaning=None if files or errors else meaning)  # fmt: skip
    if not ranked:
        return []
    return _recalled(
        view, ranked, signals, terms, found,
        files=paths, errors=errors, workspace=workspace, known_commits=known_commits, weights=weights,
        file_exists_check=file_exists_check, learned=learned, meaning=meaning, factors=factors,
    )  # fmt: skip


def _recalled(
    view: ProjectView,
    ranked: Sequence[tuple[int, float]],
    signals: Signals,
    terms: QueryTerms,
    found: LocalizedRows,
    *,
    files: Sequence[str],
    errors: Sequence[str],
    workspace: str | None,
    known_commits: Collection[str] | None,
    weights: RankingWeights,
    file_exists_check: bool,
    learned: Learned | None,
    meaning: npt.NDArray[np.float64] | None,
    factors: npt.NDArray[np.float64] | None,
) -> list[Recalled]:
    """The ranked rows as ``Recalled`` fixes: redacted, tiered, marked, with their reasons."""
    exists = workspace_checker(workspace) if file_exists_check else None
    value = strength(signals, weights) * (1.0 if factors is None else factors)
    touched = view.file_rows(list(files), workspace)
    rescued = None if files or errors else _rescued_cosines(meaning, value, ranked, weights.floor)
    results: list[Recalled] = []
    for row, score in ranked:
        entry = view.redacted(row)
        close = value[row] >= weights.close_strength or signals.errors[row] >= 1.0
        results.append(
            Recalled(
                entry=entry,
                score=score,
                regressed=bool(view.regressed_mask[row]),
                regressed_by=view.regressed.get(entry.id),
                stale=stale_marks(entry, known_commits=known_commits, file_exists=exists),
                tier=CLOSE if close else POSSIBLE,
                reasons=replace(
                    reasons(view, row, terms=terms, signals=signals, touched=touched, weights=weights),
                    use=None if learned is None else explain(learned.uses.get(entry.id)),
                    meaning=None if rescued is None else _MEANS.format(rescued[row]),
                    localized=found.reason(row),
                ),
            )
        )
    return sorted(results, key=lambda r: r.tier != CLOSE)  # closely related first, by score within


_MEANS = "its request means what the task says (similarity {:.2f})"


def _rescued_cosines(
    meaning: npt.NDArray[np.float64] | None,
    value: npt.NDArray[np.float64],
    ranked: Sequence[tuple[int, float]],
    floor: float,
) -> npt.NDArray[np.float64] | None:
    """``meaning`` when the answer is the meaning signal's rescue (every returned fix is under the floor:
    ``ranking.rank`` rescues only when nothing passed it), else None."""
    if meaning is None or any(value[row] >= floor for row, _ in ranked):
        return None
    return meaning


def reasons(
    view: ProjectView,
    row: int,
    *,
    terms: QueryTerms,
    signals: Signals,
    touched: dict[str, set[int]],
    weights: RankingWeights = DEFAULT_WEIGHTS,
) -> Reasons:
    """What entry ``row`` shares with the query (``Reasons``), most distinctive first, redacted."""
    entry = view.entries[row]
    matched = view.code.matched(terms.code.keys, row)
    by_idf = sorted(matched, key=lambda k: (-view.code.idf[k], k))  # ties by name: the same in every process
    symbols = [s for s in entry.symbols if any(k in matched for k in symbol_keys(s.rsplit("::", 1)[-1]))]
    paths = [k[2:] for k in by_idf if k.startswith("p:")]
    forms = set(terms.forms or match_forms(terms.tokens))
    idf = view.lexical.idf
    words = sorted(
        {w for w in view.keyword_lists[row] if (form := _form(w)) in forms and idf.get(form, 0.0) > 0.0},
        key=lambda w: (-idf.get(_form(w), 0.0), w),
    )
    error = None
    if signals.errors[row] >= 1.0:
        error = "same error"
    elif signals.errors[row] > 0.0 and weights.error_type > 0.0:
        error = "same error type"
    return Reasons(
        symbols=tuple(redact(s) for s in symbols[:MAX_REASONS]),
        paths=tuple(redact(p) for p in _unnested(paths)[:MAX_REASONS]),
        files=tuple(redact(f) for f, rows in sorted(touched.items()) if row in rows)[:MAX_REASONS],
        error=error,
        words=tuple(redact(w) for w in words[:MAX_REASONS]),
    )


def _form(word: str) -> str:
    return match_forms([word])[0]


def _unnested(paths: list[str]) -> list[str]:
    """``paths`` without a segment that a longer matched path already shows (``golang`` under
    ``golang/stubmethods``)."""
    pairs = [p for p in paths if "/" in p]
    return [p for p in paths if "/" in p or not any(p in q.split("/") for q in pairs)]
