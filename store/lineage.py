"""Lineages by the turns' time: which entry supersedes which, derived when the log is read. Pure.

The rule: an entry supersedes what ``store.reconcile`` would have chosen for it had the turns arrived in
``(ts, id)`` order (``order_key``), whatever order their lines arrived in. So the newest of a lineage is
the turn with the latest ``ts`` that replaces the others, and a late replay (a backfill of old turns) never
hides a newer fix.

- The lines of the log's *ordered prefix* (``ordered_prefix``: its first lines, when they are also the
  first turns by time, each after the one before) keep their stored ``supersedes``: reconcile wrote them
  against exactly the turns before them, so they are that decision already. A log whose turns arrived in
  time order, as live traffic does, is all prefix: reading it costs what it always did (``superseded_by``).
- Every later line is decided again, in ``(ts, id)`` order, its stored ``supersedes`` ignored, by
  ``reconcile`` against the live turns before it in time. Its stored link is a hint the reader does not
  follow; ``FixStore.repair`` (``fixmem doctor --fix``) rewrites the log in time order with the links
  decided here (``relinked``), so the whole log is prefix again.

A lineage (``store.history.lineage`` over the decided links) is oldest first, each link later in time than
the one it supersedes, the newest (the live one) last.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from store.entry import FixEntry
from store.history import order_key, superseded_by
from store.recall.index import meaning_text
from store.recall.tokenize import tokenize
from store.recall.vectors import Matrix, embed_many
from store.reconcile import file_set, reconcile


def ordered_prefix(entries: Sequence[FixEntry]) -> int:
    """How many first lines of ``entries`` (log order) are also the first turns by ``order_key``, in order:
    the lines whose stored ``supersedes`` were decided against exactly the turns before them in time."""
    keys = [order_key(e) for e in entries]
    run = 1 if keys else 0
    while run < len(keys) and keys[run - 1] < keys[run]:
        run += 1
    if run == len(keys):
        return run
    return bisect_left(keys, min(keys[run:]), 0, run)  # the prefix keys below every later line's


def supersession(
    entries: Sequence[FixEntry],
    *,
    vectors: Callable[[], Matrix] | None = None,
    file_sets: Callable[[], Sequence[frozenset[str]]] | None = None,
) -> dict[str, str]:
    """``{superseded id: id of the entry superseding it}`` by the turns' time (the module's rule).

    ``vectors()`` and ``file_sets()`` give every entry's meaning vector and ``file_set`` when the caller
    holds them; they are asked for only when some line is out of time order.
    """
    k = ordered_prefix(entries)
    head = superseded_by(entries[:k])
    if k == len(entries):
        return head
    matrix = vectors() if vectors is not None else embed_many([tokenize(meaning_text(e)) for e in entries])
    matrix = np.ascontiguousarray(matrix)  # reconcile gathers rows (the entries sharing a file)
    files = file_sets() if file_sets is not None else [file_set(e) for e in entries]
    tail = sorted(range(k, len(entries)), key=lambda i: order_key(entries[i]))
    decided = reconcile(
        entries[:k],
        matrix[:k],
        [entries[i] for i in tail],
        new_vectors=matrix[np.asarray(tail, dtype=np.intp)],
        live=[e.id not in head for e in entries[:k]],
        existing_files=files[:k],
        keep_given=False,
    )
    out = dict(head)
    for entry in decided:
        if entry.supersedes is not None:
            out[entry.supersedes] = entry.id
    return out


def relinked(entries: Sequence[FixEntry], superseded: Mapping[str, str]) -> list[FixEntry]:
    """``entries`` in ``(ts, id)`` order with the ``supersedes`` that ``superseded`` decided: the lines of
    the ordered prefix as they are, every later one naming what it supersedes (or nothing). Read back, the
    result gives the same ``supersession`` and every line of it is prefix."""
    k = ordered_prefix(entries)
    before = {new: old for old, new in superseded.items()}
    out = list(entries[:k])
    for entry in sorted(entries[k:], key=order_key):
        target = before.get(entry.id)
        out.append(entry if entry.supersedes == target else entry.model_copy(update={"supersedes": target}))
    return out
