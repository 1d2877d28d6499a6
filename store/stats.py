"""Counts and ratios over one project's log, for ``fixmem stats``, the HTTP API and dashboards. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from store.entry import OUTCOMES, FixEntry
from store.persist.fixlog import MalformedLine

TOP_TAGS = 10


@dataclass(frozen=True)
class Stats:
    """One project's log at a glance. ``ratios`` are shares of ``total`` in 0..1; ts in unix seconds."""

    project: str
    total: int
    by_outcome: dict[str, int]
    ratios: dict[str, float]
    top_tags: list[tuple[str, int]]
    superseded: int  # entries a later entry replaced in meaning (kept, not recalled)
    regressed: int  # fixed entries a later partial entry showed did not hold
    malformed: int  # complete lines that are not valid entries
    malformed_lines: list[MalformedLine]
    oldest_ts: float | None
    newest_ts: float | None
    bytes: int  # size of the log file

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (tags as ``[tag, count]`` pairs, malformed as objects)."""
        data = asdict(self)
        data["top_tags"] = [[tag, count] for tag, count in self.top_tags]
        return data


def compute_stats(
    project: str,
    entries: Sequence[FixEntry],
    *,
    malformed: Sequence[MalformedLine],
    superseded: Mapping[str, str],
    regressed: Mapping[str, str],
    size_bytes: int,
) -> Stats:
    """The ``Stats`` of a project from its parsed log and what history derived from it."""
    counts = Counter(e.outcome for e in entries)
    total = len(entries)
    by_outcome: dict[str, int] = {o: counts.get(o, 0) for o in OUTCOMES}
    tags = Counter(tag for e in entries for tag in dict.fromkeys(e.tags))
    stamps = [e.ts for e in entries]
    return Stats(
        project=project,
        total=total,
        by_outcome=by_outcome,
        ratios={o: (n / total if total else 0.0) for o, n in by_outcome.items()},
        top_tags=sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TAGS],
        superseded=sum(1 for e in entries if e.id in superseded),
        regressed=sum(1 for e in entries if e.id in regressed),
        malformed=len(malformed),
        malformed_lines=list(malformed),
        oldest_ts=min(stamps) if stamps else None,
        newest_ts=max(stamps) if stamps else None,
        bytes=size_bytes,
    )
