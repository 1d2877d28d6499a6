"""Does the memory help? The impact of fix recall on how agent sessions end, from the fix log. Pure.

The hooks assign each agent session an arm at its first contact (``memory``: fixes injected; ``holdback``:
none, the control; ``fixmem.hooks.arms``) and each turn's entry keeps the session's record as of that turn
(``session_id`` and the extra field ``recall``: ``ingest.recall_meta``). Here:

- ``sessions_of(entries, records=...)``: one outcome per session, its last entry's (by time, then id);
  intention to treat: the session counts in the arm it was assigned, whatever was shown. ``fixed`` is the
  entry's outcome (a verdict's where one exists, ``store.verdicts``); ``verdict`` is what a verdict said
  (None without one); ``claimed`` the agent's own tests. A session whose turns made no entry (they touched
  no file) is known from its session record (``store.sessions``, kept by the worker) and counts as not
  fixed (``no_entry``: no fix was made); left out, it would be selection after treatment. A session whose
  entry rotation dropped is known from the record the store then kept (``dropped_records``), with the
  outcome that entry had; rotation drops unverified entries first, so without it the sessions left
  would look more fixed than they ended.
- ``wilson`` and ``newcombe``: the 95% Wilson score interval of a ratio, and Newcombe's hybrid score
  interval (method 10, Newcombe 1998) of the difference of two ratios: memory minus holdback.
- ``sessions_needed``: the sessions (both arms) a two-sided test at ``alpha`` needs to detect ``effect``
  (absolute points) with ``power``, at the given holdback share and base ratio (normal approximation).
- ``report(sessions)``: per arm, sessions, the three fixed ratios, follow rates; the lift with its
  interval for each measure; per fix, how often it was shown, followed, and how sessions that followed
  it ended.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from store.entry import FixEntry
from store.sessions import Ended, SessionRecord, sorted_ids

MEMORY, HOLDBACK = "memory", "holdback"
ARMS = (MEMORY, HOLDBACK)
MEASURES = (
    "outcome",
    "verdict",
    "claimed",
)  # the outcome (verdict-backed where one exists), verdict-only, claimed
Z95 = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True)
class SessionOutcome:
    """One agent session: its arm, how its last turn ended, and the fixes shown (or shadow) and followed."""

    session: str
    project: str
    arm: str
    ts: float
    fixed: bool  # the outcome: a verdict's where one exists, else the agent's tests
    verdict: bool | None  # a verdict said fixed (True) or not (False); None: no verdict
    claimed: bool  # the agent's own tests said fixed
    shown: tuple[str, ...] = ()  # injected (memory) or shadow (holdback) entry ids
    followed: tuple[str, ...] = ()
    no_entry: bool = False  # known only from its session record: no turn of it made an entry


def session_of(entry: FixEntry) -> SessionOutcome | None:
    """The session record an entry carries (None for an entry without one, or a malformed one)."""
    record, session = (entry.model_extra or {}).get("recall"), entry.session_id
    if not isinstance(record, dict) or not isinstance(session, str) or record.get("arm") not in ARMS:
        return None
    arm = str(record["arm"])
    shown = _ids(record.get("injected" if arm == MEMORY else "shadow"))
    followed = tuple(i for i in record.get("followed") or () if isinstance(i, str))
    judged = (entry.outcome_source or "").startswith("verdict:") and entry.outcome != "unverified"
    return SessionOutcome(
        session=session,
        project=entry.project,
        arm=arm,
        ts=entry.ts,
        fixed=entry.outcome == "fixed",
        verdict=(entry.outcome == "fixed") if judged else None,
        claimed=(entry.agent_outcome or entry.outcome) == "fixed",
        shown=shown,
        followed=followed,
    )


def _ids(items: Any) -> tuple[str, ...]:
    if not isinstance(items, list):
        return ()
    return tuple(i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str))


def sessions_of(
    entries: Iterable[FixEntry], *, since: float | None = None, records: Iterable[SessionRecord] = ()
) -> list[SessionOutcome]:
    """One outcome per session: its last entry's (by time, then id), or "no entry" (not fixed) for a
    session only ``records`` know, for sessions that end at or after ``since`` (unix seconds; None: all).

    A session ends at its newest turn, with or without an entry. Its shown and followed ids are those of
    its newest record: the union of its last entry's and its session record's (a record only grows)."""
    last: dict[tuple[str, str], tuple[float, str, SessionOutcome]] = {}
    for entry in entries:
        found = session_of(entry)
        if found is None:
            continue
        key = (found.project, found.session)
        rank = (entry.ts, entry.id)
        if key not in last or rank > last[key][:2]:
            last[key] = (*rank, found)
    outcomes = {key: found for key, (_, _, found) in last.items()}
    for record in records:
        key = (record.project, record.session)
        outcomes[key] = _with_record(outcomes.get(key), record)
    kept = [s for s in outcomes.values() if since is None or s.ts >= since]
    return sorted(kept, key=lambda s: (s.ts, s.session))


def _with_record(known: SessionOutcome | None, record: SessionRecord) -> SessionOutcome:
    """A session's outcome once its session record is known: its newest entry's, whether the log still
    holds it (``known``) or rotation dropped it (``record.ended``); with neither, no entry."""
    if known is not None and known.arm != record.arm:  # one session, two arms: cannot happen (fixed at
        return known  # first contact); the entry's is the one the outcome was recorded with
    ended = record.ended
    if ended is not None and (known is None or ended.ts > known.ts):
        base = SessionOutcome(
            record.session, record.project, record.arm, ended.ts, ended.fixed, ended.verdict, ended.claimed
        )
    elif known is not None:
        base = known
    else:
        return SessionOutcome(
            record.session, record.project, record.arm, record.ts, False, None, False, record.shown,
            record.followed, True,
        )  # fmt: skip
    return SessionOutcome(
        base.session, base.project, base.arm, max(base.ts, record.ts), base.fixed, base.verdict, base.claimed,
        tuple(dict.fromkeys((*base.shown, *record.shown))),
        tuple(dict.fromkeys((*base.followed, *record.followed))), False,
    )  # fmt: skip


def dropped_records(entries: Iterable[FixEntry]) -> list[SessionRecord]:
    """The session records of entries rotation drops: each entry that carries its session's record, as
    that record with the outcome the entry had (``Ended``), so impact still counts the session."""
    found = []
    for entry in entries:
        s = session_of(entry)
        if s is not None:
            ended = Ended(entry.ts, entry.id, s.fixed, s.verdict, s.claimed)
            shown = sorted_ids(s.shown)
            injected, shadow = (shown, ()) if s.arm == MEMORY else ((), shown)
            followed = sorted_ids(s.followed)
            found.append(SessionRecord(s.project, s.session, s.arm, s.ts, injected, shadow, followed, ended))
    return found


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes / n`` ((0, 1) when ``n`` is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Lift:
    """The difference of two ratios (memory minus holdback) with its interval, in points of 0..1."""

    difference: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def newcombe(k1: int, n1: int, k2: int, n2: int, z: float = Z95) -> Lift | None:
    """``k1/n1 - k2/n2`` with Newcombe's hybrid score interval; None when an arm is empty."""
    if n1 <= 0 or n2 <= 0:
        return None
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1, z)
    l2, u2 = wilson(k2, n2, z)
    d = p1 - p2
    return Lift(
        d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    )


def sessions_needed(
    base: float, effect: float, share: float, *, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Sessions (both arms) to detect ``effect`` over a holdback ratio ``base`` with ``power``, a ``share``
    of them held back (two-sided, normal approximation); None when it cannot be reached (no effect, a
    share of 0 or 1, a ratio pushed past 0..1)."""
    treated = base + effect
    if effect == 0 or not 0 < share < 1 or not 0 <= base <= 1 or not 0 <= treated <= 1:
        return None
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    variance = treated * (1 - treated) / (1 - share) + base * (1 - base) / share
    if variance <= 0:
        variance = 1 / min(share, 1 - share) / 4  # both ratios at 0 or 1: the worst case, p = 1/2
    return math.ceil(z * z * variance / (effect * effect))


@dataclass(frozen=True)
class ArmSummary:
    """One arm: its sessions and how they ended, and how the fixes shown there were followed."""

    arm: str
    sessions: int
    fixed: int  # the outcome (verdict-backed where a verdict exists)
    verdict_sessions: int  # sessions with a verdict
    verdict_fixed: int
    claimed_fixed: int
    shown: int  # fixes shown (injected, or shadow in holdback), counted per session
    followed: int  # of those, followed
    sessions_shown: int  # sessions shown at least one fix
    sessions_followed: int  # sessions that followed at least one
    no_entry: int = 0  # sessions none of whose turns made an entry (counted not fixed)

    def ratio(self, measure: str) -> float | None:
        """The fixed ratio of ``measure`` (None without sessions to divide by)."""
        k, n = self.counts(measure)
        return k / n if n else None

    def counts(self, measure: str) -> tuple[int, int]:
        """(fixed, sessions) of ``measure``: ``outcome``, ``verdict`` or ``claimed``."""
        if measure == "verdict":
            return self.verdict_fixed, self.verdict_sessions
        return (self.claimed_fixed if measure == "claimed" else self.fixed), self.sessions

    @property
    def follow_rate(self) -> float | None:
        """Followed fixes over fixes shown (None when none was shown)."""
        return self.followed / self.shown if self.shown else None


@dataclass(frozen=True)
class FixUsage:
    """One fix: sessions it was injected in, shadowed in, followed in, and fixed after a follow."""

    entry_id: str
    injected: int = 0
    shadow: int = 0
    followed: int = 0
    followed_fixed: int = 0


@dataclass(frozen=True)
class ImpactReport:
    """The answer: the arms, the lift per measure, the sessions an ``effect`` needs, and the fixes."""

    arms: dict[str, ArmSummary]
    lifts: dict[str, Lift | None]
    effect: float
    needed: int | None  # sessions (both arms) the effect needs at the observed share and base
    fixes: list[FixUsage] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return sum(a.sessions for a in self.arms.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (``fixmem impact --json``)."""
        return {
            "sessions": self.sessions,
            "arms": {
                name: {
                    "sessions": a.sessions,
                    "fixed": a.fixed,
                    "fixed_ratio": a.ratio("outcome"),
                    "verdict_sessions": a.verdict_sessions,
                    "verdict_fixed": a.verdict_fixed,
                    "verdict_fixed_ratio": a.ratio("verdict"),
                    "claimed_fixed": a.claimed_fixed,
                    "claimed_fixed_ratio": a.ratio("claimed"),
                    "shown": a.shown,
                    "followed": a.followed,
                    "follow_rate": a.follow_rate,
                    "sessions_shown": a.sessions_shown,
                    "sessions_followed": a.sessions_followed,
                    "no_entry": a.no_entry,
                    "no_entry_ratio": a.no_entry / a.sessions if a.sessions else None,
                }
                for name, a in self.arms.items()
            },
            "lift": {
                m: None
                if lift is None
                else {"difference": lift.difference, "low": lift.low, "high": lift.high}
                for m, lift in self.lifts.items()
            },
            "effect": self.effect,
            "sessions_needed": self.needed,
            "more_sessions_needed": None if self.needed is None else max(0, self.needed - self.sessions),
            "fixes": [vars(f) for f in self.fixes],
        }


def summarize_arm(arm: str, sessions: Sequence[SessionOutcome]) -> ArmSummary:
    """The summary of ``arm`` over its ``sessions``."""
    judged = [s for s in sessions if s.verdict is not None]
    return ArmSummary(
        arm=arm,
        sessions=len(sessions),
        fixed=sum(s.fixed for s in sessions),
        verdict_sessions=len(judged),
        verdict_fixed=sum(bool(s.verdict) for s in judged),
        claimed_fixed=sum(s.claimed for s in sessions),
        shown=sum(len(s.shown) for s in sessions),
        followed=sum(len(set(s.followed) & set(s.shown)) for s in sessions),
        sessions_shown=sum(bool(s.shown) for s in sessions),
        sessions_followed=sum(bool(set(s.followed) & set(s.shown)) for s in sessions),
        no_entry=sum(s.no_entry for s in sessions),
    )


def fix_usage(sessions: Iterable[SessionOutcome]) -> list[FixUsage]:
    """Per fix shown in any session: injected, shadow, followed, fixed after a follow; most shown first."""
    counts: dict[str, list[int]] = {}
    for s in sessions:
        followed = set(s.followed)
        for entry_id in dict.fromkeys(s.shown):
            row = counts.setdefault(entry_id, [0, 0, 0, 0])
            row[0 if s.arm == MEMORY else 1] += 1
            if entry_id in followed:
                row[2] += 1
                row[3] += s.fixed
    usage = [FixUsage(i, *row) for i, row in counts.items()]
    return sorted(usage, key=lambda u: (-(u.injected + u.shadow), -u.followed, u.entry_id))


def report(sessions: Sequence[SessionOutcome], *, effect: float = 0.10, z: float = Z95) -> ImpactReport:
    """The impact of recall over ``sessions`` (intention to treat by assigned arm)."""
    arms = {arm: summarize_arm(arm, [s for s in sessions if s.arm == arm]) for arm in ARMS}
    memory, holdback = arms[MEMORY], arms[HOLDBACK]
    lifts = {m: newcombe(*memory.counts(m), *holdback.counts(m), z=z) for m in MEASURES}
    total = memory.sessions + holdback.sessions
    base = holdback.ratio("outcome")
    needed = None
    if total and base is not None:
        needed = sessions_needed(base, effect, holdback.sessions / total)
    return ImpactReport(arms, lifts, effect, needed, fix_usage(sessions))
