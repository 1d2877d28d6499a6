"""A project's entries with everything recall derives from them, computed once per log version. Pure.

A ``ProjectView`` is built from the entries of one log snapshot (plus the on-disk index when it is
usable) and caches, lazily: the keyword matrix, the meaning vectors, supersession, regressions, file and
error lookups, and redacted copies of the entries it has returned. The store keeps one view per log
file, keyed by the file's identity, so a warm recall does no parsing and no tokenizing of entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from posixpath import basename

import numpy as np
import numpy.typing as npt
import orjson

from store.entry import FixEntry
from store.history import RegressionRule, order_key, regressions
from store.lineage import ordered_prefix, supersession
from store.paths import normalize_path, path_suffix_match
from store.recall.chunks import read_text
from store.recall.code import CodeIndex, CodeTerms, entry_keys
from store.recall.index import LexicalIndex, idf, keywords, meaning_text, usable_index
from store.recall.ranking import OUTCOME_CODES, FloatArray, RankingWeights, Signals
from store.recall.signatures import ErrorIndex, error_words, query_error_parts
from store.recall.tokenize import match_forms, tokenize, unique
from store.recall.vectors import Matrix, Vector, VectorBuffer, dot_rows, embed, embed_many
from store.reconcile import file_set, reconcile
from store.redact import redact_obj


def meaning_tokens(entry: FixEntry) -> list[str]:
    """The tokens of an entry's task + errors (what its meaning vector is made of)."""
    return tokenize(meaning_text(entry))


def error_only_words(entry: FixEntry) -> frozenset[str]:
    """Match forms an entry states only in its errors, not in its task, solution or symbols: what a
    query's error line shares with them is error text against error text, which the error signal
    compares (``ProjectView.signals``)."""
    if not entry.errors:
        return frozenset()
    said = match_forms(tokenize("\n".join([entry.task, entry.solution, *entry.symbols])))
    return frozenset(match_forms(tokenize("\n".join(entry.errors)))).difference(said)


def _index_pairs(entries: Sequence[FixEntry], keyword_lists: Sequence[list[str]]) -> list[bytes]:
    return [
        orjson.dumps(e.id) + b":" + orjson.dumps(kw) for e, kw in zip(entries, keyword_lists, strict=True)
    ]


# A view's supersession as the next view carries it: (superseded map, live mask, in time order, newest key).
History = tuple[dict[str, str], npt.NDArray[np.bool_], bool, tuple[float, str] | None]


@dataclass
class Derived:
    """What a view derives per entry that the next view reuses (after an append, or a rotation or a
    forget), each in log order; None until first asked for.

    ``keyword_lists`` and ``vectors`` are always carried (an append needs them for the index and the
    new rows); the rest are carried when this view computed them, so an append costs the new entries,
    not a redo of the log. ``extend`` and ``subset`` build the next view's ``Derived``.
    """

    keyword_lists: list[list[str]] | None = None
    vectors: VectorBuffer | None = None  # rows ``[0, len(entries))`` (the buffer may hold more)
    index_pairs: list[bytes] | None = None
    file_sets: list[frozenset[str]] | None = None
    error_only_words: list[frozenset[str]] | None = None
    code_keys: list[frozenset[str]] | None = None  # ``store.recall.code.entry_keys`` of each entry
    rows: dict[str, int] | None = None  # ``{id: row}``
    superseded: dict[str, str] | None = None  # ``{superseded id: superseding id}`` (``store.lineage``)
    live: npt.NDArray[np.bool_] | None = None  # whether each entry is the newest of its lineage
    in_order: bool | None = None  # whether every line is in the time order (``lineage.ordered_prefix``)
    newest: tuple[float, str] | None = None  # the latest ``order_key`` of the entries

    def extend(
        self,
        new: Sequence[FixEntry],
        *,
        keyword_lists: list[list[str]],
        vectors: VectorBuffer,
        history: History | None = None,
    ) -> Derived:
        """The ``Derived`` of these entries followed by ``new``: ``keyword_lists`` and ``vectors`` are
        already the whole result's; the rest is what this one computed, updated for ``new``
        (``history``: the result's supersession, when the view could carry it over)."""
        n = len(keyword_lists) - len(new)
        out = Derived(keyword_lists=keyword_lists, vectors=vectors)
        if self.file_sets is not None:
            out.file_sets = [*self.file_sets, *(file_set(e) for e in new)]
        if self.error_only_words is not None:
            out.error_only_words = [*self.error_only_words, *map(error_only_words, new)]
        if self.code_keys is not None:
            out.code_keys = [*self.code_keys, *(entry_keys(e.files, e.symbols) for e in new)]
        if self.index_pairs is not None:
            out.index_pairs = [*self.index_pairs, *_index_pairs(new, keyword_lists[n:])]
        if self.rows is not None:
            rows = dict(self.rows)
            for i, entry in enumerate(new, start=n):
                rows[entry.id] = i
            out.rows = rows
        if history is not None:
            out.superseded, out.live, out.in_order, out.newest = history
        return out

    def subset(
        self,
        entries: Sequence[FixEntry],
        rows: Sequence[int],
        *,
        keyword_lists: list[list[str]],
        vectors: VectorBuffer,
    ) -> Derived:
        """The ``Derived`` of ``entries`` (these, whole) at ``rows``, in that order: ``keyword_lists``
        and ``vectors`` are these entries' own; the rest is what this one computed."""
        out = Derived(keyword_lists=[keyword_lists[r] for r in rows], vectors=vectors.subset(rows))
        if self.index_pairs is not None:
            out.index_pairs = [self.index_pairs[r] for r in rows]
        if self.file_sets is not None:
            out.file_sets = [self.file_sets[r] for r in rows]
        if self.error_only_words is not None:
            out.error_only_words = [self.error_only_words[r] for r in rows]
        if self.code_keys is not None:
            out.code_keys = [self.code_keys[r] for r in rows]
        self._subset_supersession(out, entries, rows)
        return out

    def _subset_supersession(self, out: Derived, entries: Sequence[FixEntry], rows: Sequence[int]) -> None:
        """Set ``out.superseded`` and ``out.live`` for ``entries`` at ``rows``.

        Exact when the lines are in time order (then so are the kept ones, and ``store.lineage`` reads
        their stored links) and no dropped entry supersedes anything: then every kept entry keeps the same
        superseders, so the map only loses the dropped targets (``superseded_by`` would otherwise redo the
        whole log on the next append: docs/performance.md, "Store at the cap").
        """
        if self.superseded is None or self.live is None or not self.in_order or list(rows) != sorted(rows):
            return  # lines out of time order: dropping one may change what the others decide
        kept = set(rows)
        dropped = [entries[i] for i in range(len(entries)) if i not in kept]
        if any(e.supersedes for e in dropped):
            return
        gone = {e.id for e in dropped}
        out.superseded = {t: s for t, s in self.superseded.items() if t not in gone}
        out.live = self.live[np.asarray(rows, dtype=np.intp)]
        out.in_order = True  # kept in order, lines in time order stay in time order; the last is the newest
        out.newest = order_key(entries[rows[-1]]) if rows else None


class ProjectView:
    """Derived, cached data over one project's entries (log order).

    What carries over to the next view is computed into ``Derived`` (its getters below fill it); the
    ``cached_property`` on each getter only makes later reads an attribute lookup.
    """

    def __init__(
        self,
        entries: Sequence[FixEntry],
        *,
        index: object = None,
        derived: Derived | None = None,
        regression_rule: RegressionRule | None = None,
    ) -> None:
        """``index`` is the parsed on-disk index (checked, used if consistent); ``derived`` is what a
        previous view already computed for these entries (``Derived.extend``, ``Derived.subset``)."""
        self.entries = list(entries)
        self._index = index
        self._derived = derived if derived is not None else Derived()
        self._regression_rule = regression_rule or RegressionRule()
        self._redacted: dict[int, FixEntry] = {}

    def extend(self, new: Sequence[FixEntry], *, new_vectors: Matrix | None = None) -> ProjectView:
        """A view of these entries followed by ``new``, reusing this view's keywords and vectors.

        ``new_vectors``: the meaning vectors of ``new`` when the caller already computed them.
        """
        if not new:
            return self
        keyword_lists = [*self.keyword_lists, *(keywords(e) for e in new)]
        if new_vectors is None:
            new_vectors = embed_many([meaning_tokens(e) for e in new])
        vectors = self._vector_buffer.extended(len(self.entries), new_vectors)
        history = self._extended_history(new, vectors.rows(len(self.entries) + len(new)))
        return ProjectView(
            [*self.entries, *new],
            derived=self._derived.extend(new, keyword_lists=keyword_lists, vectors=vectors, history=history),
            regression_rule=self._regression_rule,
        )

    def _extended_history(self, new: Sequence[FixEntry], vectors: Matrix) -> History | None:
        """The supersession of these entries followed by ``new`` (whose meaning vectors are the last rows
        of ``vectors``), when this view computed its own and every new turn is later than all before it;
        None otherwise (an older turn came late: the next read decides by time again, ``store.lineage``).
        """
        known = self._derived
        if known.superseded is None or known.live is None or known.in_order is None:
            return None
        newest = known.newest
        for entry in new:
            key = order_key(entry)
            if newest is not None and key <= newest:
                return None
            newest = key
        n = len(self.entries)
        rows = self.rows
        superseded = dict(known.superseded)
        live = np.concatenate([known.live, np.ones(len(new), dtype=bool)])
        if known.in_order:  # the new lines are in time order too: their stored links are the decision
            decided: Sequence[FixEntry] = new
            trusted = {e.id: i for i, e in enumerate(new, start=n)}
        else:  # decided as ``store.lineage`` decides every line after the first one out of order
            decided = reconcile(
                self.entries,
                vectors[:n],
                new,
                new_vectors=vectors[n:],
                live=known.live,
                existing_files=self.file_sets,
                row_of=rows,
                keep_given=False,
            )
            trusted = {e.id: i for i, e in enumerate(decided, start=n)}
        for i, entry in enumerate(decided, start=n):
            target = entry.supersedes
            row = rows.get(target, trusted.get(target, i)) if target else i
            if row < i:
                superseded[target] = entry.id  # type: ignore[index]
                live[row] = False
        return superseded, live, known.in_order, newest

    def subset(self, rows: Sequence[int]) -> ProjectView:
        """A view of the entries at ``rows`` (in that order), reusing this view's keywords and vectors."""
        derived = self._derived.subset(
            self.entries, rows, keyword_lists=self.keyword_lists, vectors=self._vector_buffer
        )
        return ProjectView(
            [self.entries[r] for r in rows], derived=derived, regression_rule=self._regression_rule
        )

    def memory_bytes(self) -> int:
        """A rough size of what this view holds (vectors dominate: 4 KiB per entry)."""
        vectors = self._derived.vectors
        return (vectors.nbytes if vectors is not None else 0) + 2048 * len(self.entries)

    @cached_property
    def rows(self) -> dict[str, int]:
        """``{id: row}``."""
        if self._derived.rows is None:
            self._derived.rows = {e.id: i for i, e in enumerate(self.entries)}
        return self._derived.rows

    @cached_property
    def keyword_lists(self) -> list[list[str]]:
        """Each entry's index keywords, from the on-disk index when usable, else tokenized now."""
        if self._derived.keyword_lists is None:
            usable = usable_index(self._index, [e.id for e in self.entries])
            if usable is not None:
                self._derived.keyword_lists = [list(usable[e.id]) for e in self.entries]
            else:
                self._derived.keyword_lists = [keywords(e) for e in self.entries]
        return self._derived.keyword_lists

    def index_object(self) -> dict[str, list[str]]:
        """The on-disk index for these entries."""
        return {e.id: kw for e, kw in zip(self.entries, self.keyword_lists, strict=True)}

    @cached_property
    def index_pairs(self) -> list[bytes]:
        """Each entry's serialized ``"id":[keywords]`` member of the index object."""
        if self._derived.index_pairs is None:
            self._derived.index_pairs = _index_pairs(self.entries, self.keyword_lists)
        return self._derived.index_pairs

    def index_bytes(self) -> bytes:
        """The on-disk index as JSON bytes (equal to ``orjson.dumps(index_object())``)."""
        return b"{" + b",".join(self.index_pairs) + b"}"

    @cached_property
    def lexical(self) -> LexicalIndex:
        """The weighted keyword matrix."""
        return LexicalIndex(self.keyword_lists)

    @cached_property
    def code_keys(self) -> list[frozenset[str]]:
        """Each entry's code keys: its files' path keys and its symbols' keys (``store.recall.code``)."""
        if self._derived.code_keys is None:
            self._derived.code_keys = [entry_keys(e.files, e.symbols) for e in self.entries]
        return self._derived.code_keys

    @cached_property
    def code(self) -> CodeIndex:
        """The code keys as postings, with IDF over the entries."""
        return CodeIndex(self.code_keys)

    @cached_property
    def _vector_buffer(self) -> VectorBuffer:
        buffer = self._derived.vectors
        if buffer is None or buffer.filled < len(self.entries):
            buffer = VectorBuffer.of(embed_many([meaning_tokens(e) for e in self.entries]))
            self._derived.vectors = buffer
        return buffer

    @property
    def vectors(self) -> Matrix:
        """Meaning vectors (task + errors), one row per entry."""
        return self._vector_buffer.rows(len(self.entries))

    @cached_property
    def file_sets(self) -> list[frozenset[str]]:
        """Each entry's normalized file set (``reconcile.file_set``)."""
        if self._derived.file_sets is None:
            self._derived.file_sets = [file_set(e) for e in self.entries]
        return self._derived.file_sets

    @cached_property
    def superseded(self) -> dict[str, str]:
        """``{superseded id: id of the entry superseding it}``, by the turns' time (``store.lineage``)."""
        known = self._derived
        if known.superseded is None:
            known.superseded = supersession(
                self.entries, vectors=lambda: self.vectors, file_sets=lambda: self.file_sets
            )
            known.in_order = ordered_prefix(self.entries) == len(self.entries)
            known.newest = max(map(order_key, self.entries), default=None)
        return known.superseded

    @cached_property
    def live(self) -> npt.NDArray[np.bool_]:
        """Whether each entry is the newest of its lineage."""
        if self._derived.live is None:
            superseded = self.superseded
            self._derived.live = np.array([e.id not in superseded for e in self.entries], dtype=bool)
        return self._derived.live

    @cached_property
    def regressed(self) -> dict[str, str]:
        """``{fixed id: id of the later partial entry showing it regressed}``."""
        return regressions(self.entries, self._regression_rule)

    @cached_property
    def regressed_mask(self) -> npt.NDArray[np.bool_]:
        """Whether each entry is a regressed fix."""
        return np.array([e.id in self.regressed for e in self.entries], dtype=bool)

    @cached_property
    def ts(self) -> FloatArray:
        """Entry timestamps (unix seconds)."""
        return np.array([e.ts for e in self.entries], dtype=np.float64)

    @cached_property
    def outcome_codes(self) -> npt.NDArray[np.int64]:
        """Outcome code of each entry (``ranking.OUTCOME_CODES``)."""
        return np.array([OUTCOME_CODES[e.outcome] for e in self.entries], dtype=np.int64)

    @cached_property
    def _files_by_name(self) -> dict[str, list[tuple[int, str]]]:
        """``{basename: [(row, normalized path)]}`` for suffix-aware file matching."""
        table: dict[str, list[tuple[int, str]]] = {}
        for row, entry in enumerate(self.entries):
            for path in {normalize_path(f) for f in entry.files} - {""}:
                table.setdefault(basename(path), []).append((row, path))
        return table

    @cached_property
    def _errors(self) -> ErrorIndex:
        """The entries' error signatures by text, test and type (``store.recall.signatures``)."""
        return ErrorIndex((row, entry.errors) for row, entry in enumerate(self.entries))

    @cached_property
    def error_only_words(self) -> list[frozenset[str]]:
        """Each entry's ``error_only_words``."""
        if self._derived.error_only_words is None:
            self._derived.error_only_words = [error_only_words(e) for e in self.entries]
        return self._derived.error_only_words

    @cached_property
    def _error_only_postings(self) -> dict[str, npt.NDArray[np.intp]]:
        """``{match form: rows}`` of ``error_only_words``."""
        table: dict[str, list[int]] = {}
        for row, words in enumerate(self.error_only_words):
            for word in words:
                table.setdefault(word, []).append(row)
        return {word: np.array(rows, dtype=np.intp) for word, rows in table.items()}

    def file_rows(self, files: Sequence[str], workspace: str | None) -> dict[str, set[int]]:
        """``{normalized query file: rows of the entries that touched it}`` (suffix-aware)."""
        wanted = {normalize_path(f, workspace) for f in files} - {""}
        return {
            path: {
                row
                for row, known in self._files_by_name.get(basename(path), ())
                if path_suffix_match(path, known)
            }
            for path in wanted
        }

    def file_signal(self, files: Sequence[str], workspace: str | None) -> FloatArray:
        """Share of the query's files each entry touched (0 for every entry when no file is asked)."""
        return self._file_signals(self.file_rows(files, workspace))[0]

    def _file_signals(self, touched: dict[str, set[int]]) -> tuple[FloatArray, FloatArray]:
        """(share of the query's files each entry touched, their summed IDF over the entries)."""
        n = len(self.entries)
        hits = np.zeros(n, dtype=np.float64)
        mass = np.zeros(n, dtype=np.float64)
        for rows in touched.values():
            hits[list(rows)] += 1.0
            if rows:
                mass[list(rows)] += idf(n, len(rows))
        return (hits / len(touched) if touched else hits), mass

    def error_signal(
        self, errors: Sequence[str], weights: RankingWeights, workspace: str | None = None
    ) -> FloatArray:
        """1 where an entry holds the same error as one the query names (``signatures.same_error``: a
        runner's wrapping, test ids and raw numbers or positions do not matter), ``weights.error_type``
        where it only holds the same error type, else 0."""
        index = self._errors
        signal = np.zeros(len(self.entries), dtype=np.float64)
        for error in errors:
            if not error.strip():
                continue
            parts = query_error_parts(error, workspace)
            rows = list(index.same_kind(parts))
            signal[rows] = np.maximum(signal[rows], weights.error_type)
            signal[list(index.same(parts))] = 1.0
        return signal

    def signals(
        self,
        query: QueryTerms,
        *,
        files: Sequence[str],
        errors: Sequence[str],
        workspace: str | None,
        weights: RankingWeights,
    ) -> Signals:
        """Every match signal of one query against every entry.

        Where the error signal finds an entry's errors different from the query's (another error, or
        only the same type), the query's error lines are no evidence in the word and vector signals:
        their words get no credit for words the entry states only in its errors, and the cosine is the
        query text's alone. What two different errors' texts share is the error type's wording
        (``object has no attribute``, ``validation errors for``, ``runtime error: … out of range``) and
        the runner's (``FAILED tests/…py::test_``), not the bug. Error words the entry states in its
        task, solution or symbols still count.
        """
        error_signal = self.error_signal(errors, weights, workspace)
        uncredited: dict[str, npt.NDArray[np.intp]] = {}
        cosine = dot_rows(self.vectors, query.vector)
        if query.error_words:
            differ = np.ones(len(self.entries), dtype=bool)
            for error in errors:
                if error.strip():
                    differ[list(self._errors.overlapping(query_error_parts(error, workspace)))] = False
            for word in query.error_words:
                rows = self._error_only_postings.get(word)
                if rows is not None:
                    uncredited[word] = rows[differ[rows]]
            cosine = np.where(differ, dot_rows(self.vectors, query.text_vector), cosine)
        overlap = self.lexical.overlap(
            query.tokens,
            min_query_words=weights.coverage_min_words,
            uncredited=uncredited,
            forms=query.forms or None,
        )
        touched = self.file_rows(files, workspace)
        share, mass = self._file_signals(touched)
        return Signals(
            jaccard=overlap.jaccard,
            coverage=overlap.coverage,
            files=share,
            errors=error_signal,
            cosine=cosine,
            words=(
                overlap.shared * self.lexical.length_norm(weights.evidence_bm25_k1, weights.evidence_bm25_b)
                if weights.evidence_bm25_b > 0
                else overlap.shared
            ),
            code=self.code.evidence(query.code.paths | query.code.symbols),
            code_words=self.code.evidence(query.code.words),
            file_mass=mass,
            query_weight=overlap.query_weight,
            unit=idf(len(self.entries), 1),
            files_asked=bool(touched),
        )

    def redacted(self, row: int) -> FixEntry:
        """Entry ``row`` with every string field redacted again (defence in depth); memoized."""
        cached = self._redacted.get(row)
        if cached is None:
            entry = self.entries[row]
            cached = FixEntry.model_validate(redact_obj(entry.model_dump()))
            self._redacted[row] = cached
        return cached


@dataclass(frozen=True)
class QueryTerms:
    """A query's tokens and meaning vectors: its text plus the words of its errors (``error_words``:
    without the runner's prefix and the error type's name, which the error signal weighs)."""

    tokens: list[str]  # text + error words
    vector: Vector  # of ``tokens``
    text_vector: Vector  # of the text's tokens alone
    error_words: frozenset[str]  # match forms found only in the error lines, not in the text
    code: CodeTerms  # the names, paths and frames the text mentions (error lines: the error signal's)
    forms: list[str] = field(default_factory=list)  # ``tokens``' match forms, no repeats, first-seen order


def query_terms(query: str, errors: Sequence[str]) -> QueryTerms:
    """The ``QueryTerms`` of a query's text and the error lines it passed (the text read in one pass:
    ``store.recall.chunks``)."""
    text = read_text(query)
    error_tokens = tokenize("\n".join(map(error_words, errors)))
    if not error_tokens:
        return QueryTerms(text.tokens, text.vector, text.vector, frozenset(), text.code, text.forms)
    tokens = text.tokens + error_tokens
    error_forms = match_forms(error_tokens)
    only_errors = frozenset(error_forms) - frozenset(text.forms)
    forms = unique([*text.forms, *error_forms])
    return QueryTerms(tokens, embed(tokens), text.vector, only_errors, text.code, forms)
