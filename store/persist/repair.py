"""What ``FixStore.repair`` rewrites of a log's lineages: its lines in time order, each naming what it
supersedes by the turns' time (``store.lineage``). Pure: the store takes the lock and does the rewrite.

Logs written before supersession went by time, or fed a late replay since, hold lines out of time order
whose stored ``supersedes`` can name a newer turn. Readers decide those lines again on every parse of the
log; once relinked, the log is in time order and read as stored (``lineage.ordered_prefix``), and what
the store answers is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from store.entry import FixEntry
from store.lineage import relinked
from store.persist.fixlog import encode_entry


@dataclass(frozen=True)
class Repaired:
    """What ``FixStore.repair`` found or did to one project's log.

    ``quarantined``: lines moved to the quarantine file (a torn tail). ``moved``: lines whose place in
    the log changes to put it in time order. ``relinked``: lines whose stored ``supersedes`` changes.
    ``written``: whether the log was rewritten (False for a check, or when nothing changes).
    """

    quarantined: int = 0
    moved: int = 0
    relinked: int = 0
    written: bool = False

    @property
    def needed(self) -> bool:
        """Whether the lineages' rewrite has anything to change."""
        return bool(self.moved or self.relinked)


@dataclass(frozen=True)
class RelinkPlan:
    """The log's lines after the rewrite (entries with their exact lines), and what changes."""

    keep: list[tuple[FixEntry, bytes]]
    moved: int
    relinked: int


def plan_relink(
    entries: Sequence[FixEntry], raws: Sequence[bytes], superseded: Mapping[str, str]
) -> RelinkPlan:
    """The lines of ``entries`` (log order; ``raws``: their exact lines) in time order, each with the
    ``supersedes`` that ``superseded`` (``lineage.supersession``) decided; an unchanged entry keeps its
    exact line."""
    line_of = {e.id: raw for e, raw in zip(entries, raws, strict=True)}
    before = {e.id: e.supersedes for e in entries}
    keep: list[tuple[FixEntry, bytes]] = []
    moved = changed = 0
    for row, entry in enumerate(relinked(entries, superseded)):
        moved += entries[row].id != entry.id
        if entry.supersedes != before[entry.id]:
            changed += 1
            keep.append((entry, encode_entry(entry)))
        else:
            keep.append((entry, line_of[entry.id]))
    return RelinkPlan(keep, moved, changed)
