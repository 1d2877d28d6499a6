"""What the log's history says about its entries: supersession, lineages, regressions. Pure.

Everything here is derived at read time from the entries; nothing is rewritten. "Later" is by the turn's
time (``order_key``: ``ts``, ties by id) unless said otherwise.

- ``superseded_by`` reads the stored links: an entry is superseded when a later *line* names it in
  ``supersedes``. A line can only supersede an earlier line, so a hand-edited cycle cannot hide a whole
  lineage. What the store answers follows ``store.lineage``, which reads them only where the lines are in
  time order and decides the rest by the turns' time.
- A *lineage* is the chain of supersession through an entry, oldest first.
- A ``fixed`` entry has *regressed* when a later ``partial`` entry shares one of its errors
  (``store.recall.signatures``) or enough of its files (``RegressionRule``): the fix did not hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from store.entry import FixEntry
from store.errorsig import error_parts
from store.paths import normalize_path
from store.recall.signatures import ErrorIndex


@dataclass(frozen=True)
class RegressionRule:
    """When a later partial entry counts as a regression of an earlier fix."""

    min_file_jaccard: float = 0.5  # |files ∩| / |files ∪| at or above this, or a shared error signature


def order_key(entry: FixEntry) -> tuple[float, str]:
    """Where a turn stands in time: its ``ts``, ties broken by id (so any two entries are ordered)."""
    return (entry.ts, entry.id)


def superseded_by(entries: Sequence[FixEntry]) -> dict[str, str]:
    """``{old id: id of the latest later line that supersedes it}``."""
    seen: set[str] = set()
    result: dict[str, str] = {}
    for entry in entries:
        target = entry.supersedes
        if target and target in seen and target != entry.id:
            result[target] = entry.id
        seen.add(entry.id)
    return result


def lineage(
    entries: Sequence[FixEntry], entry_id: str, superseded: Mapping[str, str] | None = None
) -> list[FixEntry]:
    """The supersession chain through ``entry_id``, oldest first; ``[]`` when the id is not present.

    ``superseded``: ``{old id: id superseding it}`` as decided (``store.lineage.supersession``); default
    the stored links (``superseded_by``). Each link is followed both ways while its entry is present.
    """
    by_id = {e.id: e for e in entries}
    if entry_id not in by_id:
        return []
    successor = superseded_by(entries) if superseded is None else superseded
    before = {new: old for old, new in successor.items()}
    chain = [by_id[entry_id]]
    current = entry_id
    while (current := before.get(current, "")) in by_id:
        chain.insert(0, by_id[current])
    current = entry_id
    while (current := successor.get(current, "")) in by_id:
        chain.append(by_id[current])
    return chain


def _file_jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def regressions(entries: Sequence[FixEntry], rule: RegressionRule | None = None) -> dict[str, str]:
    """``{fixed entry id: id of the first later partial entry that shows it regressed}`` (later by
    ``order_key``, not by line).

    A shared error is the same error as recall reads it (``signatures.same_error``): the fix's
    ``t.py::test_a - KeyError: 'k'`` and the later ``KeyError: 'k'`` are one error.
    """
    rule = rule or RegressionRule()
    entries = sorted(entries, key=order_key)  # later by the turn's time, whatever order the lines came in
    by_file: dict[str, list[int]] = {}
    fixed_errors = ErrorIndex()
    files: dict[int, frozenset[str]] = {}
    result: dict[str, str] = {}
    for row, entry in enumerate(entries):
        entry_files = frozenset(filter(None, (normalize_path(f) for f in entry.files)))
        if entry.outcome == "partial":
            candidates: set[int] = set()
            for name in entry_files:
                candidates.update(by_file.get(name, ()))
            shared_error = {i for e in entry.errors if e.strip() for i in fixed_errors.same(error_parts(e))}
            for i in sorted(candidates | shared_error):
                fixed_id = entries[i].id
                if fixed_id in result:
                    continue
                if i in shared_error or _file_jaccard(files[i], entry_files) >= rule.min_file_jaccard:
                    result[fixed_id] = entry.id
        elif entry.outcome == "fixed":
            files[row] = entry_files
            for name in entry_files:
                by_file.setdefault(name, []).append(row)
            fixed_errors.add(row, entry.errors)
    return result
