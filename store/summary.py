"""A project's log in a few numbers, for a listing of many projects (the UI's projects page). Pure.

What a row of projects needs and no more: the stored project key, the count of entries by outcome, the
oldest and newest ts, and the count by outcome of each UTC day (the outcomes-over-time chart). It is
small (a key per day with entries, at most the rotation cap of them) and it folds: the summary of a log
that grew is the old summary ``extended`` by the new entries, so an append costs the size of the batch,
not of the log. History (superseded, regressed) is not in it: it needs the whole log (``store.stats``).

Claimed and verified (issue 30): ``claimed`` counts entries by the agent's own label
(``store.verdicts.agent_outcome``), ``verified`` those whose outcome a verdict in effect decided, by that
outcome. Every write path summarizes again what it wrote, so these are what the log holds, whatever
verdicts replaced, rotation dropped or ``forget`` deleted (decision 0061).

``store.persist.summary_file`` keeps it beside the log, written under the project's write lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from store.entry import OUTCOMES, FixEntry
from store.verdicts import agent_outcome, in_effect

DAY_SECONDS: Final = 86_400
_SLOT: Final = {outcome: i for i, outcome in enumerate(OUTCOMES)}

DayCounts = tuple[int, ...]  # entries of each outcome that day, in ``OUTCOMES`` order


def day_of(ts: float) -> int:
    """The UTC day of unix seconds ``ts``, as days since 1970-01-01."""
    return int(ts // DAY_SECONDS)


@dataclass(frozen=True)
class LogSummary:
    """One project's log at a glance: what ``summarize`` says of its valid entries."""

    project: str | None  # the first entry's stored project key (what ``FixStore.projects`` lists)
    total: int
    by_outcome: dict[str, int]  # every outcome, zero included
    oldest_ts: float | None  # unix seconds
    newest_ts: float | None
    days: dict[int, DayCounts] = field(default_factory=dict)  # ``day_of(ts)`` -> counts by outcome
    claimed: dict[str, int] = field(default_factory=dict)  # every outcome: entries by the agent's own label
    verified: dict[str, int] = field(default_factory=dict)  # every outcome: entries a verdict decided

    @property
    def coverage(self) -> float:
        """The share of entries with a verdict in effect, in 0..1 (0 when empty)."""
        return sum(self.verified.values()) / self.total if self.total else 0.0

    @property
    def fixed_claimed(self) -> float | None:
        """The agents' fixed ratio: entries they labelled ``fixed`` over all (None when empty)."""
        return self.claimed.get("fixed", 0) / self.total if self.total else None

    @property
    def fixed_verified(self) -> float | None:
        """The verified fixed ratio: ``fixed`` among entries a verdict decided (None when none did)."""
        judged = sum(self.verified.values())
        return self.verified.get("fixed", 0) / judged if judged else None

    @property
    def ratios(self) -> dict[str, float]:
        """Each outcome's share of ``total`` in 0..1 (0 when empty), as ``Stats.ratios``."""
        return {o: (n / self.total if self.total else 0.0) for o, n in self.by_outcome.items()}

    def extended(self, entries: Iterable[FixEntry]) -> LogSummary:
        """This summary with ``entries`` appended to the log."""
        counts = [self.by_outcome.get(o, 0) for o in OUTCOMES]
        claimed, verified = Counter(self.claimed), Counter(self.verified)
        days = {day: list(n) for day, n in self.days.items()}
        project, total, oldest, newest = self.project, self.total, self.oldest_ts, self.newest_ts
        for entry in entries:
            slot = _SLOT[entry.outcome]
            counts[slot] += 1
            _count_verdict(entry, claimed, verified)
            days.setdefault(day_of(entry.ts), [0] * len(OUTCOMES))[slot] += 1
            if project is None:
                project = entry.project
            total += 1
            oldest = entry.ts if oldest is None else min(oldest, entry.ts)
            newest = entry.ts if newest is None else max(newest, entry.ts)
        return LogSummary(
            project=project,
            total=total,
            by_outcome=dict(zip(OUTCOMES, counts, strict=True)),
            oldest_ts=oldest,
            newest_ts=newest,
            days={day: tuple(n) for day, n in sorted(days.items())},
            claimed=_every(claimed),
            verified=_every(verified),
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-serializable dict (days as ``[day, n, n, n]`` rows); ``from_json`` reads it back."""
        return {
            "project": self.project,
            "total": self.total,
            "by_outcome": self.by_outcome,
            "oldest_ts": self.oldest_ts,
            "newest_ts": self.newest_ts,
            "outcomes": list(OUTCOMES),
            "days": [[day, *counts] for day, counts in self.days.items()],
            "claimed": self.claimed,
            "verified": self.verified,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LogSummary:
        """The summary ``to_json`` wrote; raises ValueError when ``data`` is not one (or is inconsistent)."""
        try:
            if list(data["outcomes"]) != list(OUTCOMES):
                raise ValueError("the outcomes changed since it was written")
            days = {int(row[0]): tuple(int(n) for n in row[1:]) for row in data["days"]}
            by_outcome: dict[str, int] = {o: int(data["by_outcome"][o]) for o in OUTCOMES}
            summary = cls(
                project=None if data["project"] is None else str(data["project"]),
                total=int(data["total"]),
                by_outcome=by_outcome,
                oldest_ts=None if data["oldest_ts"] is None else float(data["oldest_ts"]),
                newest_ts=None if data["newest_ts"] is None else float(data["newest_ts"]),
                days=days,
                claimed={o: int(data["claimed"][o]) for o in OUTCOMES},
                verified={o: int(data["verified"][o]) for o in OUTCOMES},
            )
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"not a log summary: {exc!r}") from exc
        if any(len(n) != len(OUTCOMES) for n in days.values()) or sum(by_outcome.values()) != summary.total:
            raise ValueError("not a log summary: counts disagree")
        if sum(sum(n) for n in days.values()) != summary.total:
            raise ValueError("not a log summary: days disagree with the total")
        if sum(summary.claimed.values()) != summary.total or sum(summary.verified.values()) > summary.total:
            raise ValueError("not a log summary: claimed or verified disagree with the total")
        return summary


def _every(counts: Mapping[str, int]) -> dict[str, int]:
    return {o: int(counts.get(o, 0)) for o in OUTCOMES}


def _count_verdict(entry: FixEntry, claimed: Counter[str], verified: Counter[str]) -> None:
    """Count ``entry`` by the agent's own label, and by its outcome when a verdict decided it."""
    claimed[agent_outcome(entry)] += 1
    if in_effect(entry) is not None:
        verified[entry.outcome] += 1


EMPTY_SUMMARY: Final = LogSummary(
    None,
    0,
    dict.fromkeys(OUTCOMES, 0),
    None,
    None,
    claimed=dict.fromkeys(OUTCOMES, 0),
    verified=dict.fromkeys(OUTCOMES, 0),
)


def summarize(entries: Sequence[FixEntry]) -> LogSummary:
    """The summary of a log holding ``entries`` (what ``EMPTY_SUMMARY.extended(entries)`` gives, with the
    counting done by ``Counter``: a rotation at the cap summarizes 500 entries on every append)."""
    if not entries:
        return EMPTY_SUMMARY
    stamps = [e.ts for e in entries]
    pairs = Counter(zip([int(ts // DAY_SECONDS) for ts in stamps], [e.outcome for e in entries], strict=True))
    days: dict[int, list[int]] = {}
    by_outcome: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for (day, outcome), count in pairs.items():
        days.setdefault(day, [0] * len(OUTCOMES))[_SLOT[outcome]] += count
        by_outcome[outcome] += count
    claimed: Counter[str] = Counter()
    verified: Counter[str] = Counter()
    for entry in entries:
        _count_verdict(entry, claimed, verified)
    return LogSummary(
        project=entries[0].project,
        total=len(entries),
        by_outcome=by_outcome,
        oldest_ts=min(stamps),
        newest_ts=max(stamps),
        days={day: tuple(n) for day, n in sorted(days.items())},
        claimed=_every(claimed),
        verified=_every(verified),
    )
