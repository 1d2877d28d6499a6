"""Localized files as recall signals (workspace mode): which fixes touched a file the task was localized
to. Pure.

``store.localize`` turns a task text and the checkout into files with a weight in (0, 1] and a reason.
Here they become per-entry signals of ``ranking.Signals`` (the summed weight × IDF of the localized files
an entry touched, and whether it touched a trusted one) and the reason recall gives. A fix that touched
them gains as if the files were known, weighted by how sure the localization is; one that touched no
trusted file must be strong on its own, the more so when nothing was localized with confidence
(``RankingWeights.localized_*``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from store.localize import Localized
from store.paths import normalize_path
from store.recall.index import idf
from store.recall.ranking import RankingWeights, Signals
from store.recall.view import ProjectView


@dataclass(frozen=True)
class LocalizedRows:
    """Per localized file (normalized), the rows of the entries that touched it."""

    files: tuple[tuple[Localized, frozenset[int]], ...]

    def best_for(self, row: int) -> Localized | None:
        """The heaviest localized file entry ``row`` touched, or None."""
        touched = [loc for loc, rows in self.files if row in rows]
        return max(touched, key=lambda loc: (loc.weight, loc.path)) if touched else None

    def reason(self, row: int) -> str | None:
        """What recall says of entry ``row``: the localized file it touched and why, or None."""
        loc = self.best_for(row)
        return None if loc is None else because(loc)


def workspace_mode(
    view: ProjectView,
    signals: Signals,
    localized: Sequence[Localized] | None,
    *,
    workspace: str | None,
    weights: RankingWeights,
    known: Sequence[str],
) -> tuple[Signals, LocalizedRows]:
    """``signals`` and the localized files' rows in workspace mode (``localized`` not None: the task was
    localized in its checkout, maybe to nothing); unchanged, and no rows, without a checkout."""
    if localized is None:
        return signals, LocalizedRows(())
    found = localized_rows(view, localized, workspace, weights, known)
    return with_localized(signals, found, len(view.entries), weights), found


def localized_rows(
    view: ProjectView,
    localized: Sequence[Localized],
    workspace: str | None,
    weights: RankingWeights,
    known: Sequence[str] = (),
) -> LocalizedRows:
    """The entries of ``view`` that touched each localized file of at least ``localized_min_weight``
    (files also ``known`` left out: a known file keeps weight 1)."""
    skip = {normalize_path(f, workspace) for f in known}
    out: list[tuple[Localized, frozenset[int]]] = []
    for loc in localized:
        path = normalize_path(loc.path, workspace)
        if not path or path in skip or not weights.localized_min_weight <= loc.weight <= 1 or loc.weight <= 0:
            continue
        rows = view.file_rows([path], workspace).get(path, set())
        out.append((loc, frozenset(rows)))
    return LocalizedRows(tuple(out))


def with_localized(signals: Signals, found: LocalizedRows, n: int, weights: RankingWeights) -> Signals:
    """``signals`` in workspace mode: the localized files' mass, and the gate (the entries that touched a
    trusted localized file; the others must be strong on their own, even when nothing was localized)."""
    mass = np.zeros(n, dtype=np.float64)
    gate = np.zeros(n, dtype=bool)
    sure = False
    for loc, rows in found.files:
        if loc.weight >= weights.localized_trust:
            sure = True
            gate[list(rows)] = True
        if rows:
            mass[list(rows)] += loc.weight * idf(n, len(rows))
    return replace(signals, localized_mass=mass, localized_gate=gate, localized_sure=sure)


def because(loc: Localized) -> str:
    """The reason recall gives for a fix that touched localized file ``loc``."""
    return f"touched {loc.path}, where the task was localized: {loc.why}"
