"""The rotation decision: which entries a project keeps when it holds more than ``cap``. Pure.

Unverified entries go first (oldest first), then the oldest of the rest. So a fixed or partial entry is
never dropped while an unverified one remains, and ``keep`` never exceeds ``cap``. Ties on ``ts`` go by
id, so the decision depends only on the set of entries, never on their order: re-appending entries that
rotation dropped (a replayed batch) drops exactly them again, and the log comes out the same.
``keep`` and ``drop`` keep the log's order.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from store.entry import FixEntry


@dataclass(frozen=True)
class RotationPlan:
    """What rotation keeps and what it drops, both in log order."""

    keep: list[FixEntry]
    drop: list[FixEntry]
    kept_rows: list[int]  # the position in the input of each entry of ``keep``


def should_rotate(count: int, cap: int) -> bool:
    """Whether a log of ``count`` entries must rotate under ``cap``."""
    return count > cap


def plan_rotation(entries: Sequence[FixEntry], cap: int) -> RotationPlan:
    """Split ``entries`` (log order) into keep / drop so that at most ``cap`` are kept.

    Raises ValueError when ``cap`` is negative.
    """
    if cap < 0:
        raise ValueError(f"cap must be >= 0, got {cap}")
    excess = len(entries) - cap
    if excess <= 0:
        return RotationPlan(keep=list(entries), drop=[], kept_rows=list(range(len(entries))))
    # The `excess` lowest by (verified, ts, id): a total order, so this is the head of the full sort, at
    # O(n log excess) instead of O(n log n) (an append at the cap drops a batch's worth of a 500-line log).
    keys = [(e.outcome != "unverified", e.ts, e.id) for e in entries]
    dropped = set(heapq.nsmallest(excess, range(len(entries)), key=keys.__getitem__))
    kept_rows = [i for i in range(len(entries)) if i not in dropped]
    return RotationPlan(
        keep=[entries[i] for i in kept_rows],
        drop=[e for i, e in enumerate(entries) if i in dropped],
        kept_rows=kept_rows,
    )
