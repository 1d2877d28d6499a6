"""Verdicts: a later, independent word on whether a recorded fix held (CI, a benchmark, a review, a revert).

Pure: values in, values out. A verdict decides an entry's ``outcome`` when it outranks what decided it so
far. Precedence, highest first: revert > review > ci > benchmark > merged > agent-tests (the agent's own
last test run, what extraction wrote); within one source the latest ``ts`` wins (ties: the larger
``(outcome, detail)``, so the result never depends on arrival order). Applying the same verdict twice, or
one that ranks below the verdict in effect, changes nothing. The agent's own label stays in
``agent_outcome``; ``outcome_source`` says what decided ``outcome`` (``agent-tests`` | ``verdict:<source>``).

Every verdict received is kept in the line's ``verdicts`` list (an extra field, present only on lines with
one): the ``HISTORY`` greatest by ``(ts, rank)``, oldest first, whatever decided the outcome, each with
``via`` (how it found the entry: ``id``, or the linker's tier ``commit`` | ``session`` | ``content``).
Keeping the greatest of a set is order-free, so the history too never depends on arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from store.entry import OUTCOMES, FixEntry, Outcome

AGENT_TESTS: Final = "agent-tests"
# Highest precedence first. ``agent-tests`` is no verdict source: it is what a verdict overrides.
PRECEDENCE: Final = ("revert", "review", "ci", "benchmark", "merged", AGENT_TESTS)
SOURCES: Final = PRECEDENCE[:-1]
MAX_DETAIL_CHARS = 500
HISTORY: Final = 10  # verdicts kept on a line's ``verdicts`` list
VIAS: Final = ("id", "commit", "session", "content")  # how a verdict found its entry

State = Literal["applied", "superseded", "missing", "forgotten"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """One verdict on entry ``entry_id``: ``outcome`` says whether the fix held, by ``source`` at ``ts``."""

    entry_id: str
    source: str
    outcome: Outcome
    ts: float  # unix seconds the verdict was reached
    detail: str = ""
    via: str = field(default="", compare=False)  # ``VIAS``; "" when unknown (older lines). Not compared.

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown verdict source {self.source!r}: expected one of {', '.join(SOURCES)}")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}: expected one of {', '.join(OUTCOMES)}")

    def stored(self) -> Verdict:
        """This verdict as an entry keeps it: the detail cut to ``MAX_DETAIL_CHARS``."""
        if len(self.detail) <= MAX_DETAIL_CHARS:
            return self
        return Verdict(
            self.entry_id, self.source, self.outcome, self.ts, self.detail[:MAX_DETAIL_CHARS], self.via
        )

    def rank(self) -> tuple[int, float, str, str]:
        """The order verdicts are compared in: precedence, then time, then content (a total order)."""
        return (len(PRECEDENCE) - PRECEDENCE.index(self.source), self.ts, self.outcome, self.detail)

    def to_json(self) -> dict[str, Any]:
        """The entry's ``verdict`` field (and a row of its ``verdicts``); ``via`` only when known."""
        value: dict[str, Any] = {"source": self.source, "outcome": self.outcome, "ts": self.ts}
        value["detail"] = self.detail
        if self.via:
            value["via"] = self.via
        return value

    @classmethod
    def from_json(cls, entry_id: str, value: Any) -> Verdict | None:
        """The verdict an entry's ``verdict`` field holds; None when there is none or it is unreadable."""
        if not isinstance(value, dict):
            return None
        try:
            return cls(
                entry_id,
                str(value["source"]),
                value["outcome"],
                float(value["ts"]),
                str(value.get("detail") or ""),
                str(value.get("via") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


def in_effect(entry: FixEntry) -> Verdict | None:
    """The verdict that decided ``entry.outcome``; None when the agent's own tests did."""
    return Verdict.from_json(entry.id, entry.verdict)


def agent_outcome(entry: FixEntry) -> Outcome:
    """The agent's own label of the turn, whatever verdict came later."""
    return entry.agent_outcome if entry.agent_outcome is not None else entry.outcome


def source_of(entry: FixEntry) -> str:
    """What decided the entry's outcome: ``agent-tests`` or ``verdict:<source>``."""
    return entry.outcome_source or AGENT_TESTS


def history(entry: FixEntry) -> list[Verdict]:
    """Every verdict the entry keeps, oldest first: its ``verdicts`` list, or for a line written before
    the list, the verdict in effect alone (unreadable rows are skipped)."""
    rows = (entry.model_extra or {}).get("verdicts")
    if not isinstance(rows, list):
        current = in_effect(entry)
        return [] if current is None else [current]
    found = (Verdict.from_json(entry.id, row) for row in rows)
    return [v for v in found if v is not None]


def _kept(verdicts: list[Verdict], effect: Verdict) -> list[Verdict]:
    """``effect`` and the ``HISTORY - 1`` greatest others of ``verdicts`` by time, then rank, oldest first."""

    def order(v: Verdict) -> tuple[float, tuple[int, float, str, str]]:
        return (v.ts, v.rank())

    others = sorted((v for v in verdicts if v != effect), key=order)[-(HISTORY - 1) :]
    return sorted([*others, effect], key=order)


def judge(entry: FixEntry, verdict: Verdict) -> FixEntry | None:
    """``entry`` with ``verdict`` received: in effect when it outranks the verdict in effect, and in the
    history either way (the verdict in effect always is); None when it changes nothing (received before,
    or older than every verdict kept)."""
    stored = verdict.stored()
    before = history(entry)
    current = in_effect(entry)
    rules = current is None or current.rank() < stored.rank()
    effect = stored if rules or current is None else current
    kept = before if stored in before else _kept([*before, stored], effect)
    if kept == before and not rules:
        return None
    update: dict[str, Any] = {"verdicts": [v.to_json() for v in kept]}
    if rules:
        update |= {
            "outcome": stored.outcome,
            "agent_outcome": agent_outcome(entry),
            "outcome_source": f"verdict:{stored.source}",
            "verdict": stored.to_json(),
        }
    return entry.model_copy(update=update)


def state_of(entry: FixEntry, verdict: Verdict) -> State:
    """``applied`` when ``verdict`` (as stored: detail cut) is the one in effect on ``entry``, else
    ``superseded`` (a verdict that ranks above it rules)."""
    return "applied" if in_effect(entry) == verdict.stored() else "superseded"
