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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from store.entry import FixEntry
from store.impact import MEMORY, sessions_of

VERSION: Final = 1
FloatArray = npt.NDArray[np.float64]


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

    def __post_init__(self) -> None:
        if not 0 < self.low <= 1 <= self.high or self.prior <= 0 or not 0 < self.neutral < 1:
            raise ValueError(f"learning parameters out of range: {self}")
        if not 0 <= self.follow_credit <= 1 or not 0 <= self.claimed_credit <= 1:
            raise ValueError(f"learning credits must be in 0..1: {self}")


DEFAULT_PARAMS: Final = LearnParams()


@dataclass(frozen=True)
class FixUse:
    """One fix in ``memory`` sessions: shown in, followed in, and of those, ended fixed by a verdict or by
    the agent's own tests only (``verdict_fixed + claimed_fixed <= followed <= shown``)."""

    shown: int = 0
    followed: int = 0
    verdict_fixed: int = 0
    claimed_fixed: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.verdict_fixed + self.claimed_fixed <= self.followed <= self.shown:
            raise ValueError(f"inconsistent usage counts: {self}")
        if min(self.verdict_fixed, self.claimed_fixed) < 0:
            raise ValueError(f"negative usage counts: {self}")

    def to_json(self) -> list[int]:
        """``[shown, followed, verdict_fixed, claimed_fixed]``."""
        return [self.shown, self.followed, self.verdict_fixed, self.claimed_fixed]


Usage = Mapping[str, FixUse]  # entry id -> its use


def usage_of(entries: Iterable[FixEntry]) -> dict[str, FixUse]:
    """Per fix shown in a ``memory`` session of ``entries``: its ``FixUse`` (each session as its last
    turn recorded it, ``store.impact.sessions_of``). Holdback sessions count nowhere."""
    rows: dict[str, list[int]] = {}
    for session in sessions_of(entries):
        if session.arm != MEMORY:
            continue
        followed = set(session.followed)
        for entry_id in dict.fromkeys(session.shown):
            row = rows.setdefault(entry_id, [0, 0, 0, 0])
            row[0] += 1
            if entry_id in followed:
                row[1] += 1
                if session.verdict is True:
                    row[2] += 1
                elif session.verdict is None and session.fixed:
                    row[3] += 1
    return {entry_id: FixUse(*row) for entry_id, row in sorted(rows.items())}


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
    return {"v": VERSION, "fields": ["shown", "followed", "verdict_fixed", "claimed_fixed"],
            "fixes": {i: u.to_json() for i, u in sorted(usage.items())}}  # fmt: skip


def from_json(data: Any) -> dict[str, FixUse]:
    """What ``to_json`` wrote; raises ValueError for anything else."""
    try:
        if data["v"] != VERSION:
            raise ValueError(f"usage version {data['v']!r}, not {VERSION}")
        return {str(i): FixUse(*(int(n) for n in row)) for i, row in data["fixes"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a usage file body: {exc!r}") from exc


@dataclass(frozen=True)
class Learned:
    """What recall applies for a view: each row's multiplier (``factors``, the view's order) and each
    shown fix's use (for the reasons)."""

    factors: FloatArray
    uses: Usage


def learned(ids: Sequence[str], usage: Usage, params: LearnParams = DEFAULT_PARAMS) -> Learned | None:
    """The ``Learned`` of a view whose entries have ``ids`` (log order); None when no fix of it was ever
    shown (every multiplier is 1)."""
    if not any(i in usage for i in ids):
        return None
    factors = np.array([multiplier(usage.get(i), params) for i in ids], dtype=np.float64)
    return Learned(factors, usage)
