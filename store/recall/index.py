"""The keyword index and its arithmetic: what an entry is indexed under, IDF-weighted overlap. Pure.

On disk the index is plain JSON ``{id: [keywords...]}`` (``<project-safe>.index.json``; its sha256 in a
sibling seal file, ``store.persist.fsio.overwrite_with_seal``); an entry's keywords are the unique tokens
of its task, solution, errors and symbols. In memory, ``LexicalIndex`` turns the keyword lists into
postings (token → rows), so a query's overlap with every entry is a few vectorized scatter-adds, weighted
by BM25's inverse document frequency ``idf(t) = ln(1 + (n - df + 0.5) / (df + 0.5))``: a token in every
entry (``changed``, ``tests``, ``passed`` of the solution boilerplate) weighs ~0 (ln(1 + 0.5 / (n +
0.5))), a token in one entry ln(1 + (n - 0.5) / 1.5), an unknown one ln(2n + 2).
Keywords and query tokens are compared in their match forms (``store.recall.tokenize.match_form``: stem, then
coding lexicon), so ``retries``/``retrying`` and ``segfault``/``panic`` meet; the on-disk keywords stay
plain tokens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from store.entry import FixEntry
from store.recall.tokenize import match_forms, tokenize, unique

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


def idf(n: int, df: int) -> float:
    """Inverse document frequency of a word in ``df`` of ``n`` entries (BM25's, never negative)."""
    return math.log1p((n - df + 0.5) / (df + 0.5))


class Postings:
    """Keys' row lists packed in one array (CSR), so that summing weights over the rows of many keys
    is a few numpy calls, not a Python loop of scatter-adds (a 600-word text holds ~300 keywords)."""

    def __init__(self, rows_of: Mapping[str, Sequence[int]], size: int) -> None:
        """``rows_of`` maps each key to the rows holding it; ``size`` is the number of rows."""
        self.size = size
        self.ids = {key: i for i, key in enumerate(rows_of)}
        lengths = np.fromiter((len(r) for r in rows_of.values()), dtype=np.intp, count=len(rows_of))
        self.starts = np.zeros(len(rows_of) + 1, dtype=np.intp)
        np.cumsum(lengths, out=self.starts[1:])
        self.rows = np.fromiter(
            (row for rows in rows_of.values() for row in rows), dtype=np.intp, count=int(self.starts[-1])
        )

    def key_ids(self, keys: Iterable[str]) -> npt.NDArray[np.intp]:
        """The ids of the keys some row holds (unknown keys left out), in ``keys``' order."""
        ids = self.ids
        return np.fromiter((i for k in keys if (i := ids.get(k)) is not None), dtype=np.intp)

    def weighted_sum(self, key_ids: npt.NDArray[np.intp], weights: FloatArray) -> FloatArray:
        """Per row, the sum of ``weights[j]`` over the keys ``key_ids[j]`` it holds."""
        if key_ids.size == 0:
            return np.zeros(self.size, dtype=np.float64)
        first = self.starts[key_ids]
        counts = self.starts[key_ids + 1] - first
        total = int(counts.sum())
        # positions of every posting of these keys: each key's run [first, first + count)
        offsets = np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(total)
        summed = np.bincount(self.rows[offsets], np.repeat(weights, counts), minlength=self.size)
        return summed.astype(np.float64, copy=False)


@dataclass(frozen=True)
class Overlap:
    """IDF-weighted overlap of one query with every entry, each array shaped ``(n,)``, in 0..1."""

    jaccard: FloatArray  # w(Q ∩ E) / w(Q ∪ E)
    coverage: FloatArray  # w(Q ∩ E) / max(w(Q), floor): how much of the query the entry covers
    shared: FloatArray  # w(Q ∩ E), absolute
    query_weight: float = 0.0  # w(Q)


class LexicalIndex:
    """A project's keyword lists as postings (token → entry rows), for vectorized overlap with a query.

    Memory is proportional to the keywords (not entries × vocabulary); a query of *q* known tokens costs
    *q* scatter-adds over the rows holding them.
    """

    def __init__(self, keyword_lists: Sequence[Sequence[str]]) -> None:
        """Build from one keyword list per entry (row order = entry order); keywords are match-formed."""
        self.size = n = len(keyword_lists)
        rows_of: dict[str, list[int]] = {}
        for row, words in enumerate(keyword_lists):
            for word in set(match_forms(words)):
                rows_of.setdefault(word, []).append(row)
        self.postings: dict[str, npt.NDArray[np.intp]] = {
            w: np.array(r, dtype=np.intp) for w, r in rows_of.items()
        }
        self.idf: dict[str, float] = {w: idf(n, len(r)) for w, r in rows_of.items()}
        self.packed = Postings(rows_of, n)
        self._idf = np.fromiter(self.idf.values(), dtype=np.float64, count=len(self.idf))
        self.unknown_idf = idf(n, 0)
        weight = np.zeros(n, dtype=np.float64)
        lengths = np.zeros(n, dtype=np.float64)
        for word, rows in self.postings.items():
            weight[rows] += self.idf[word]
            lengths[rows] += 1.0
        self.entry_weight: FloatArray = weight
        self.lengths: FloatArray = lengths  # distinct match forms per entry

    def length_norm(self, k1: float, b: float) -> FloatArray:
        """BM25's term weight of a word an entry holds once, per entry: ``(k1 + 1) / (1 + k1·(1 - b +
        b·len/avg len))`` (the keyword lists are sets, so tf is 1): a long entry's shared words count less."""
        average = float(self.lengths.mean()) if self.size else 1.0
        return (k1 + 1.0) / (1.0 + k1 * (1.0 - b + b * self.lengths / max(average, 1.0)))

    def overlap(
        self,
        query_tokens: Sequence[str],
        *,
        min_query_words: float = 0.0,
        uncredited: Mapping[str, npt.NDArray[np.intp]] | None = None,
        forms: Sequence[str] | None = None,
    ) -> Overlap:
        """Weighted Jaccard and coverage of the query's unique match forms against every entry.

        Coverage is measured against a query weight of at least ``min_query_words`` distinctive words
        (each weighing the idf of a word found in one entry, so the floor scales with the project's
        size): a query of one or two common words ("fix the bug in the test" is the single keyword
        ``test``) carries too little evidence to cover an entry completely. ``uncredited`` maps a match
        form to rows that hold it but get no credit for it (it still counts in the query's weight).
        ``forms``: the query tokens' match forms without repeats, first-seen order, when the caller has
        them (``chunks.read_text``); else they are computed from ``query_tokens``.
        """
        min_query_weight = min_query_words * idf(self.size, 1) if self.size else 0.0
        # each distinct token formed once
        words = list(forms) if forms is not None else unique(match_forms(unique(list(query_tokens))))
        if not words or self.size == 0:
            return Overlap(np.zeros(self.size), np.zeros(self.size), np.zeros(self.size))
        known = self.packed.key_ids(words)
        weights = self._idf[known]
        shared = self.packed.weighted_sum(known, weights)
        query_weight = float(weights.sum()) + (len(words) - known.size) * self.unknown_idf
        present = set(words)
        for word, rows in (uncredited or {}).items():
            if rows.size and word in self.idf and word in present:
                shared[np.intersect1d(rows, self.postings[word], assume_unique=True)] -= self.idf[word]
        union = query_weight + self.entry_weight - shared
        jaccard = np.divide(shared, union, out=np.zeros(self.size), where=union > 0)
        coverage = shared / max(query_weight, min_query_weight)
        return Overlap(jaccard, coverage, shared, query_weight)
