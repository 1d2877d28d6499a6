"""Reconcile by meaning: does a new entry replace a live entry of its project? Pure.

A new entry supersedes a live (not yet superseded) entry when all three hold:

- they mean the same: the hashed-vector cosine of their task + errors is >= ``SUPERSEDE_MIN_COSINE``
  (``store.recall.vectors``; so "fix login timeout" and "fix the login timeout bug" match, exact text is not
  needed);
- they touch the same code: their normalized file sets overlap;
- the new outcome is at least as good (fixed > partial > unverified): a failed retry never hides a fix.

Among several such entries the closest in meaning wins, then the one with the better outcome (a new fix
replaces the earlier fix; a failed attempt in between stays visible as history), then the latest turn.
The old line stays in the log; the new one carries ``supersedes: <old id>``. An entry that already names
what it supersedes (an import of an exported log) is left as it is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from store.entry import FixEntry, Outcome
from store.history import order_key, superseded_by
from store.paths import normalize_path
from store.recall.index import meaning_text
from store.recall.tokenize import tokenize
from store.recall.vectors import Matrix, Vector, dot_rows, embed, embed_many

SUPERSEDE_MIN_COSINE = 0.82
OUTCOME_RANK: dict[Outcome, int] = {"unverified": 0, "partial": 1, "fixed": 2}


def meaning_vector(entry: FixEntry) -> Vector:
    """The hashed vector of an entry's task + errors."""
    return embed(tokenize(meaning_text(entry)))


def file_set(entry: FixEntry) -> frozenset[str]:
    """An entry's files, normalized, empties dropped."""
    return frozenset(filter(None, (normalize_path(f) for f in entry.files)))


def choose_superseded(
    new: FixEntry,
    cosines: Sequence[float],
    candidates: Sequence[FixEntry],
    *,
    candidate_files: Sequence[frozenset[str]] | None = None,
    min_cosine: float = SUPERSEDE_MIN_COSINE,
) -> str | None:
    """The id of the candidate ``new`` supersedes, or None; ``cosines[i]`` is its cosine to ``candidates[i]``.

    Candidates are live entries. Ties in meaning (to 6 decimals) go to the better outcome, then to the
    later turn (``order_key``); ``candidate_files`` are their ``file_set`` when already known.
    """
    new_files = file_set(new)
    best: tuple[float, int, tuple[float, str]] | None = None
    for row, old in enumerate(candidates):
        cos = float(cosines[row])
        if cos < min_cosine or OUTCOME_RANK[new.outcome] < OUTCOME_RANK[old.outcome]:
            continue
        old_files = candidate_files[row] if candidate_files is not None else file_set(old)
        if not new_files & old_files:
            continue
        # Float noise must not decide; the latest by the turn's time, not by line (``store.lineage``).
        key = (round(cos, 6), OUTCOME_RANK[old.outcome], order_key(old))
        if best is None or key > best:
            best = key
    return best[2][1] if best is not None else None


def _slot_of(
    target: str, new_slot: Mapping[str, int], row_of: Mapping[str, int] | None, existing: Sequence[FixEntry]
) -> int | None:
    """The slot of the entry ``target`` names: an earlier new one, else its row in ``existing``."""
    if target in new_slot:
        return new_slot[target]
    if row_of is not None:
        return row_of.get(target)
    return next((i for i, e in enumerate(existing) if e.id == target), None)


def reconcile(
    existing: Sequence[FixEntry],
    existing_vectors: Matrix,
    new: Sequence[FixEntry],
    *,
    new_vectors: Matrix | None = None,
    live: Sequence[bool] | npt.NDArray[np.bool_] | None = None,
    existing_files: Sequence[frozenset[str]] | None = None,
    row_of: Mapping[str, int] | None = None,
    min_cosine: float = SUPERSEDE_MIN_COSINE,
    keep_given: bool = True,
) -> list[FixEntry]:
    """``new`` with ``supersedes`` filled in where one replaces a live entry (existing or earlier in ``new``).

    ``existing`` is the log in order and ``existing_vectors`` its meaning vectors (one row per entry).
    Optional, when the caller has them: ``new_vectors`` (``meaning_vector`` of each new entry), ``live``
    (whether each existing entry is not superseded), ``existing_files`` (their ``file_set``) and
    ``row_of`` (``{id: position}`` of ``existing``). ``keep_given=False``: ignore new entries' own links.
    """
    if not new:
        return []
    new_vectors = embed_many([tokenize(meaning_text(e)) for e in new]) if new_vectors is None else new_vectors
    live = _live(existing) if live is None else live
    files = list(existing_files) if existing_files is not None else [file_set(e) for e in existing]
    postings = _postings(files, new)
    n = len(existing)
    pool: list[FixEntry] = [*existing, *new]
    alive = np.concatenate([np.asarray(live, dtype=bool), np.zeros(len(new), dtype=bool)])
    new_slot: dict[str, int] = {}
    result: list[FixEntry] = []
    for j, incoming in enumerate(new):
        entry = incoming
        slot = n + j
        names = file_set(entry)
        target = entry.supersedes if keep_given else None
        target_slot: int | None = None
        if target is None:
            # Only entries sharing a file can be superseded: the cosine is computed for those alone.
            sharing = sorted({i for name in names for i in postings.get(name, ()) if alive[i]})
            cos = _cosines(sharing, n, existing_vectors, new_vectors, j)
            rows = [i for i, c in zip(sharing, cos, strict=True) if c >= min_cosine]
            target = choose_superseded(
                entry, [c for c in cos if c >= min_cosine], [pool[i] for i in rows],
                candidate_files=[files[i] for i in rows], min_cosine=min_cosine,
            )  # fmt: skip
            if target != entry.supersedes:
                entry = entry.model_copy(update={"supersedes": target})
            target_slot = next((i for i in rows if pool[i].id == target), None)
        else:
            target_slot = _slot_of(target, new_slot, row_of, existing)
        if target_slot is not None:
            alive[target_slot] = False
        alive[slot] = True
        new_slot[entry.id] = slot
        pool[slot] = entry
        files.append(names)
        for name in names:
            postings.setdefault(name, []).append(slot)
        result.append(entry)
    return result


def _live(existing: Sequence[FixEntry]) -> list[bool]:
    """Whether each entry is not superseded, by the stored links."""
    hidden = superseded_by(existing)
    return [e.id not in hidden for e in existing]


def _postings(files: Sequence[frozenset[str]], new: Sequence[FixEntry]) -> dict[str, list[int]]:
    """``{file: slots}`` of the entries of ``files`` that share a file with ``new`` (most of a log shares
    none with a batch; the loop adds each new entry's files as it goes)."""
    wanted = frozenset().union(*(file_set(e) for e in new))
    postings: dict[str, list[int]] = {}
    for slot, names in enumerate(files):
        if not names.isdisjoint(wanted):
            for name in names & wanted:
                postings.setdefault(name, []).append(slot)
    return postings


def _cosines(slots: Sequence[int], n: int, existing: Matrix, new: Matrix, j: int) -> list[float]:
    """The cosine of new entry ``j`` to each of ``slots`` (ascending; below ``n``: rows of ``existing``,
    else of ``new``). Sparse gathers of a few rows, no BLAS gemm (docs/decisions/0011-store.md, "No BLAS
    products on hot paths")."""
    vector = new[j]
    split = bisect_left(slots, n)
    out = dot_rows(existing[list(slots[:split])], vector).tolist() if split else []
    if split < len(slots):
        out += dot_rows(new[[i - n for i in slots[split:]]], vector).tolist()
    return out
