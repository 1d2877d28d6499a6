"""A memory that learns from use: how each fix fared when it was injected, and the recall multiplier that
follows from it. Pure.

The hooks record per agent session which fixes were injected and which the agent then *followed*
(``store.impact``: an edit of one of the fix's files, or its error met again); each turn's entry keeps
the session's record. From the log's entries, ``usage_of`` counts per fix, over ``memory`` sessions
only: the sessions it was shown in, followed in, and how those that followed it ended (a verdict's
outcome first, else the agent's own tests). Holdback sessions are never counted: their *shadow* fixes
were not shown, so "not followed" says nothing of them.

``multiplier`` turns the counts into a factor on the recall strength, in ``[low, high]`` (1: no
evidence). Each showing earns a credit: 0 when not followed, ``follow_credit`` when followed, plus up to
``1 - follow_credit`` for how the session ended (all of it for a verdict's "fixed", ``claimed_credit`` of
it for the agent's own "fixed", none for not fixed). The fix's usefulness is the mean credit with
``prior`` pseudo-showings at ``neutral`` (so a few showings move it little)::

    u = (credits + prior · neutral) / (shown + prior)
    m = 1 + (high - 1) · (u - neutral) / (1 - neutral)    when u >= neutral
    m = 1 - (1 - low) · (neutral - u) / neutral           when u <  neutral

Bounded by construction (``u`` is in 0..1), and never lower for one more follow of the same showings.
``explain`` says it in words for the recall reasons: "followed 3 of 5 times, sessions fixed", "shown 8
times, never followed".

The use also depends on the task (a fix followed by tasks of one kind is related to tasks like those, not
to every task). Per fix the counts keep the first turns (entry ids) of the last ``tasks_kept`` sessions
that followed it (its *followers*) and of those shown it that did not (its *ignorers*). ``Learned.for_query``
compares the query's strength for those rows (``store.recall.ranking.strength``: the same relevance recall
ranks by, so file names, code identifiers and error signatures count, not words alone): a fix whose
ignorers the query resembles more than its followers, by more than ``query_margin`` of the query's best
strength, is multiplied by ``query_low`` too (docs/decisions/0069-query-dependent-learning.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from store.entry import FixEntry
from store.impact import MEMORY, session_of, sessions_of

VERSION: Final = 2  # 2: the followers and ignorers of each fix
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


@dataclass(frozen=True)
class LearnParams:
    """The bounds and prior of the multiplier (module docstring). Set before the first measurement
    (docs/decisions/0060-recall-learns-from-use.md), not tuned on it."""

    low: float = 0.5
    high: float = 1.5
    prior: float = 3.0  # pseudo-showings at ``neutral``
    neutral: float = 0.25  # the usefulness of a fix nobody has seen used (multiplier 1)
    follow_credit: float = 0.5  # credit of a follow, whatever the session's end
    claimed_credit: float = 0.5  # share of the rest a session fixed by the agent's own tests earns
    tasks_kept: int = 0  # the followers and the ignorers kept per fix, each (the newest; 0: none)
    query_margin: float = 0.3  # sink when the ignorers' best strength beats the followers' by this share
    query_low: float = 0.5  # ... of the query's best strength, by this factor
    query_rise_needs_match: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.low <= 1 <= self.high or self.prior <= 0 or not 0 < self.neutral < 1:
            raise ValueError(f"learning parameters out of range: {self}")
        if not 0 <= self.follow_credit <= 1 or not 0 <= self.claimed_credit <= 1:
            raise ValueError(f"learning credits must be in 0..1: {self}")
        if self.tasks_kept < 0 or self.query_margin < 0 or not 0 < self.query_low <= 1:
            raise ValueError(f"query-dependent learning parameters out of range: {self}")


DEFAULT_PARAMS: Final = LearnParams()


@dataclass(frozen=True)
class FixUse:
    """One fix in ``memory`` sessions: shown in, followed in, and of those, ended fixed by a verdict or by
    the agent's own tests only (``verdict_fixed + claimed_fixed <= followed <= shown``); the first turns
    (entry ids) of the newest sessions that followed it and of those that did not, oldest first."""

    shown: int = 0
    followed: int = 0
    verdict_fixed: int = 0
    claimed_fixed: int = 0
    followers: tuple[str, ...] = ()
    ignorers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.verdict_fixed + self.claimed_fixed <= self.followed <= self.shown:
            raise ValueError(f"inconsistent usage counts: {self}")
        if min(self.verdict_fixed, self.claimed_fixed) < 0:
            raise ValueError(f"negative usage counts: {self}")

    def to_json(self) -> list[Any]:
        """``[shown, followed, verdict_fixed, claimed_fixed, followers, ignorers]``."""
        counts: list[Any] = [self.shown, self.followed, self.verdict_fixed, self.claimed_fixed]
        return [*counts, list(self.followers), list(self.ignorers)]


Usage = Mapping[str, FixUse]  # entry id -> its use


def usage_of(entries: Iterable[FixEntry], params: LearnParams = DEFAULT_PARAMS) -> dict[str, FixUse]:
    """Per fix shown in a ``memory`` session of ``entries``: its ``FixUse`` (each session as its last
    turn recorded it, ``store.impact.sessions_of``), with the ``params.tasks_kept`` newest followers and
    ignorers. Holdback sessions count nowhere."""
    entries = list(entries)
    first = _first_turns(entries)
    rows: dict[str, list[int]] = {}
    tasks: dict[str, tuple[list[str], list[str]]] = {}
    for session in sessions_of(entries):
        if session.arm != MEMORY:
            continue
        followed = set(session.followed)
        for entry_id in dict.fromkeys(session.shown):
            row = rows.setdefault(entry_id, [0, 0, 0, 0])
            row[0] += 1
            kept = tasks.setdefault(entry_id, ([], []))[entry_id not in followed]
            if session.session in first:
                kept.append(first[session.session])
            if entry_id in followed:
                row[1] += 1
                if session.verdict is True:
                    row[2] += 1
                elif session.verdict is None and session.fixed:
                    row[3] += 1
    n = params.tasks_kept
    return {
        i: FixUse(row[0], row[1], row[2], row[3], *(tuple(kept[-n:] if n else ()) for kept in tasks[i]))
        for i, row in sorted(rows.items())
    }


def _first_turns(entries: Sequence[FixEntry]) -> dict[str, str]:
    """Each session's first turn with a session record (by time, then id): the entry whose request is the
    session's task."""
    first: dict[str, tuple[float, str]] = {}
    for entry in entries:
        if (
            entry.session_id is not None
            and (entry.session_id not in first or (entry.ts, entry.id) < first[entry.session_id])
            and session_of(entry) is not None
        ):
            first[entry.session_id] = (entry.ts, entry.id)
    return {session: found[1] for session, found in first.items()}


def usefulness(use: FixUse, params: LearnParams = DEFAULT_PARAMS) -> float:
    """The mean credit of the fix's showings with the prior, in 0..1 (module docstring)."""
    rest = 1.0 - params.follow_credit
    credits = (
        params.follow_credit * use.followed
        + rest * use.verdict_fixed
        + rest * params.claimed_credit * use.claimed_fixed
    )
    return (credits + params.prior * params.neutral) / (use.shown + params.prior)


def multiplier(use: FixUse | None, params: LearnParams = DEFAULT_PARAMS) -> float:
    """The factor on the fix's recall strength, in ``[params.low, params.high]``; 1 for no use."""
    if use is None or use.shown == 0:
        return 1.0
    u = min(max(usefulness(use, params), 0.0), 1.0)
    if u >= params.neutral:
        value = 1.0 + (params.high - 1.0) * (u - params.neutral) / (1.0 - params.neutral)
    else:
        value = 1.0 - (1.0 - params.low) * (params.neutral - u) / params.neutral
    return min(max(value, params.low), params.high)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def explain(use: FixUse | None) -> str | None:
    """The fix's use in words (None when it was never shown): "shown 8 times, never followed",
    "followed 3 of 5 times, sessions fixed", "followed 2 of 4 times, 1 session fixed (by a verdict)"."""
    if use is None or use.shown == 0:
        return None
    if use.followed == 0:
        return f"shown {_times(use.shown)}, never followed"
    text = f"followed {use.followed} of {_times(use.shown).replace('once', '1 time')}"
    fixed = use.verdict_fixed + use.claimed_fixed
    if fixed == use.followed:
        text += ", sessions fixed" if fixed > 1 else ", session fixed"
    elif fixed:
        text += f", {fixed} session{'s' if fixed > 1 else ''} fixed"
    else:
        text += ", sessions not fixed" if use.followed > 1 else ", session not fixed"
    if use.verdict_fixed:
        text += (
            " (by a verdict)" if use.verdict_fixed == fixed == 1 else f" ({use.verdict_fixed} by a verdict)"
        )
    return text


def to_json(usage: Usage) -> dict[str, Any]:
    """A JSON-serializable form of ``usage`` (the usage file's body); ``from_json`` reads it back."""
    fields = ["shown", "followed", "verdict_fixed", "claimed_fixed", "followers", "ignorers"]
    return {"v": VERSION, "fields": fields, "fixes": {i: u.to_json() for i, u in sorted(usage.items())}}


def from_json(data: Any) -> dict[str, FixUse]:
    """What ``to_json`` wrote; raises ValueError for anything else."""
    try:
        if data["v"] != VERSION:
            raise ValueError(f"usage version {data['v']!r}, not {VERSION}")
        return {
            str(i): FixUse(int(row[0]), int(row[1]), int(row[2]), int(row[3]), _ids(row[4]), _ids(row[5]))
            for i, row in data["fixes"].items()
        }
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"not a usage file body: {exc!r}") from exc


def _ids(found: Any) -> tuple[str, ...]:
    if not isinstance(found, list):
        raise ValueError(f"not a list of entry ids: {found!r}")
    return tuple(str(i) for i in found)


@dataclass(frozen=True)
class Learned:
    """What recall applies for a view: each row's multiplier (``factors``, the view's order), each shown
    fix's use (for the reasons), and per fix with followers or ignorers in the view, its row and theirs
    (``tasks``: row, follower rows, ignorer rows) for ``for_query``."""

    factors: FloatArray
    uses: Usage
    tasks: tuple[tuple[int, IntArray, IntArray], ...] = ()
    params: LearnParams = DEFAULT_PARAMS

    def for_query(self, value: FloatArray) -> tuple[FloatArray, frozenset[int]]:
        """The factors for a query whose strength per row (before any factor) is ``value``, and the rows
        it sank: those whose ignorers' best strength beats their followers' by more than
        ``query_margin`` of the query's best (module docstring). Pure."""
        top = float(np.max(value, initial=0.0))
        if not self.tasks or top <= 0.0:
            return self.factors, frozenset()
        margin = self.params.query_margin * top
        sunk = frozenset(row for row, f, i in self.tasks if _best(value, i) - _best(value, f) > margin)
        factors = self.factors.copy()
        if self.params.query_rise_needs_match:
            unlike = [row for row, f, i in self.tasks if _best(value, f) <= _best(value, i) or row in sunk]
            factors[unlike] = np.minimum(factors[unlike], 1.0)
        if not sunk:
            return factors, frozenset()
        factors[list(sunk)] *= self.params.query_low
        return factors, sunk


def _best(value: FloatArray, rows: IntArray) -> float:
    return float(value[rows].max()) if rows.size else 0.0


QUERY_SUNK: Final = "this task is more like the tasks that passed it over than those that followed it"


def learned(ids: Sequence[str], usage: Usage, params: LearnParams = DEFAULT_PARAMS) -> Learned | None:
    """The ``Learned`` of a view whose entries have ``ids`` (log order); None when no fix of it was ever
    shown (every multiplier is 1)."""
    if not any(i in usage for i in ids):
        return None
    factors = np.array([multiplier(usage.get(i), params) for i in ids], dtype=np.float64)
    rows = {entry_id: row for row, entry_id in enumerate(ids)}
    tasks = []
    for entry_id, use in usage.items():
        row = rows.get(entry_id)
        if row is None or not (use.followers or use.ignorers):
            continue
        found = [
            np.array([rows[t] for t in kept if t in rows], dtype=np.intp)
            for kept in (use.followers, use.ignorers)
        ]
        tasks.append((row, found[0], found[1]))
    return Learned(factors, usage, tuple(tasks), params)
