"""The keyword index and its arithmetic: what an entry is indexed under, IDF-weighted overlap. Pure.

On disk the index is ``{id: [keywords...]}`` (``<project-safe>.index.json``); an entry's keywords are the
unique tokens of its task, solution, errors and symbols. In memory, ``LexicalIndex`` turns the keyword
lists into a column-major 0/1 matrix over the project's vocabulary, so a query's overlap with every entry
is one gather and one sum, weighted by smoothed inverse document frequency
``idf(t) = ln(1 + n / df(t))`` (a token in every entry weighs ln 2 ≈ 0.69; a unique one ln(1 + n)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from store.entry import FixEntry
from store.tokenize import tokenize, unique

FloatArray = npt.NDArray[np.float64]


def index_text(entry: FixEntry) -> str:
    """The text an entry is indexed under: task, solution, errors and symbols."""
    return "\n".join([entry.task, entry.solution, *entry.errors, *entry.symbols])


def meaning_text(entry: FixEntry) -> str:
    """The text that says what an entry is about (for reconciling and vectors): task and errors."""
    return "\n".join([entry.task, *entry.errors])


def keywords(entry: FixEntry) -> list[str]:
    """The unique index tokens of ``entry``, first-seen order."""
    return unique(tokenize(index_text(entry)))


def build_index(entries: Sequence[FixEntry]) -> dict[str, list[str]]:
    """The on-disk index object for ``entries``."""
    return {entry.id: keywords(entry) for entry in entries}


def usable_index(index: Any, ids: Sequence[str]) -> Mapping[str, list[str]] | None:
    """``index`` if it is a ``{id: [str...]}`` object with exactly ``ids`` as keys, else None (rebuild)."""
    if not isinstance(index, dict) or len(index) != len(set(ids)) or not all(i in index for i in ids):
        return None
    for value in index.values():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None
    return index


@dataclass(frozen=True)
class Overlap:
    """IDF-weighted overlap of one query with every entry, each array shaped ``(n,)``, in 0..1."""

    jaccard: FloatArray  # w(Q ∩ E) / w(Q ∪ E)
    coverage: FloatArray  # w(Q ∩ E) / w(Q): how much of the query the entry covers


class LexicalIndex:
    """A project's keyword lists as a weighted term matrix, for vectorized overlap with a query."""

    def __init__(self, keyword_lists: Sequence[Sequence[str]]) -> None:
        """Build from one keyword list per entry (row order = entry order)."""
        self.size = len(keyword_lists)
        self.vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for row, words in enumerate(keyword_lists):
            for word in set(words):
                rows.append(row)
                cols.append(self.vocab.setdefault(word, len(self.vocab)))
        self.matrix = np.zeros((self.size, len(self.vocab)), dtype=np.float32, order="F")
        self.matrix[rows, cols] = 1.0
        df = self.matrix.sum(axis=0, dtype=np.float64)
        self.idf: FloatArray = np.log1p(self.size / np.maximum(df, 1.0))
        self.unknown_idf = float(np.log1p(max(self.size, 1)))
        self.entry_weight: FloatArray = self.matrix.astype(np.float64) @ self.idf

    def overlap(self, query_tokens: Sequence[str]) -> Overlap:
        """Weighted Jaccard and coverage of the query's unique tokens against every entry."""
        words = unique(list(query_tokens))
        known = [self.vocab[w] for w in words if w in self.vocab]
        query_weight = float(self.idf[known].sum()) + self.unknown_idf * (len(words) - len(known))
        if not words or self.size == 0:
            zeros = np.zeros(self.size, dtype=np.float64)
            return Overlap(zeros, zeros.copy())
        shared = self.matrix[:, known].astype(np.float64) @ self.idf[known] if known else np.zeros(self.size)
        union = query_weight + self.entry_weight - shared
        jaccard = np.divide(shared, union, out=np.zeros(self.size), where=union > 0)
        coverage = shared / query_weight if query_weight > 0 else np.zeros(self.size)
        return Overlap(jaccard, coverage)
