"""Recall over one project's view: signals, ranking, abstention, redaction on the way out. Pure.

The file I/O (which view, from which log) is ``FixStore.recall``'s job; this module takes the view.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from store.entry import FixEntry
from store.recall.ranking import DEFAULT_WEIGHTS, RankingWeights, rank
from store.recall.view import ProjectView, query_terms
from store.staleness import stale_marks, workspace_checker


@dataclass(frozen=True)
class Recalled:
    """One recalled fix: the entry (redacted again), its score, and what history and checks say of it."""

    entry: FixEntry
    score: float  # ranking score (relevance × outcome and regression factors); higher is better
    regressed: bool  # a later partial entry showed this fix did not hold
    regressed_by: str | None = None  # id of that later entry
    stale: tuple[str, ...] = ()  # "stale: commit gone", "stale: file gone: …" (marked, never dropped)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {
            "entry": self.entry.model_dump(mode="json"),
            "score": self.score,
            "regressed": self.regressed,
            "regressed_by": self.regressed_by,
            "stale": list(self.stale),
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
) -> list[Recalled]:
    """The ``k`` most relevant live entries of ``view`` for the query, best first; ``[]`` if none is.

    With a ``workspace``, files are normalized against it and (if ``file_exists_check``) entries whose
    files are gone from it are marked stale.
    """
    if not view.entries or k <= 0:
        return []
    errors = list(errors or ())
    signals = view.signals(
        query_terms(query, errors),
        files=list(files or ()),
        errors=errors,
        workspace=workspace,
        weights=weights,
    )
    ranked = rank(
        signals,
        live=view.live,
        outcome_codes=view.outcome_codes,
        regressed=view.regressed_mask,
        ts=view.ts,
        k=k,
        now=now,
        weights=weights,
    )
    exists = workspace_checker(workspace) if file_exists_check else None
    results: list[Recalled] = []
    for row, score in ranked:
        entry = view.redacted(row)
        results.append(
            Recalled(
                entry=entry,
                score=score,
                regressed=bool(view.regressed_mask[row]),
                regressed_by=view.regressed.get(entry.id),
                stale=stale_marks(entry, known_commits=known_commits, file_exists=exists),
            )
        )
    return results
