"""Verdicts: a later, independent word on whether a recorded fix held (CI, a benchmark, a review, a revert).

Pure: values in, values out. A verdict decides an entry's ``outcome`` when it outranks what decided it so
far. Precedence, highest first: revert > review > ci > benchmark > merged > agent-tests (the agent's own
last test run, what extraction wrote); within one source the latest ``ts`` wins (ties: the larger
``(outcome, detail)``, so the result never depends on arrival order). Applying the same verdict twice, or
one that ranks below the verdict in effect, changes nothing. The agent's own label stays in
``agent_outcome``; ``outcome_source`` says what decided ``outcome`` (``agent-tests`` | ``verdict:<source>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from store.entry import OUTCOMES, FixEntry, Outcome

AGENT_TESTS: Final = "agent-tests"
# Highest precedence first. ``agent-tests`` is no verdict source: it is what a verdict overrides.
PRECEDENCE: Final = ("revert", "review", "ci", "benchmark", "merged", AGENT_TESTS)
SOURCES: Final = PRECEDENCE[:-1]
MAX_DETAIL_CHARS = 500

State = Literal["applied", "superseded", "missing", "forgotten"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """One verdict on entry ``entry_id``: ``outcome`` says whether the fix held, by ``source`` at ``ts``."""

    entry_id: str
    source: str
    outcome: Outcome
    ts: float  # unix seconds the verdict was reached
    detail: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown verdict source {self.source!r}: expected one of {', '.join(SOURCES)}")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}: expected one of {', '.join(OUTCOMES)}")

    def stored(self) -> Verdict:
        """This verdict as an entry keeps it: the detail cut to ``MAX_DETAIL_CHARS``."""
        if len(self.detail) <= MAX_DETAIL_CHARS:
            return self
        return Verdict(self.entry_id, self.source, self.outcome, self.ts, self.detail[:MAX_DETAIL_CHARS])

    def rank(self) -> tuple[int, float, str, str]:
        """The order verdicts are compared in: precedence, then time, then content (a total order)."""
        return (len(PRECEDENCE) - PRECEDENCE.index(self.source), self.ts, self.outcome, self.detail)

    def to_json(self) -> dict[str, Any]:
        """The entry's ``verdict`` field."""
        return {"source": self.source, "outcome": self.outcome, "ts": self.ts, "detail": self.detail}

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


def judge(entry: FixEntry, verdict: Verdict) -> FixEntry | None:
    """``entry`` with ``verdict`` in effect; None when it changes nothing (it, or one above it, rules)."""
    current = in_effect(entry)
    if current is not None and current.rank() >= verdict.stored().rank():
        return None
    return entry.model_copy(
        update={
            "outcome": verdict.outcome,
            "agent_outcome": agent_outcome(entry),
            "outcome_source": f"verdict:{verdict.source}",
            "verdict": verdict.stored().to_json(),
        }
    )


def state_of(entry: FixEntry, verdict: Verdict) -> State:
    """``applied`` when ``verdict`` (as stored: detail cut) is the one in effect on ``entry``, else
    ``superseded`` (a verdict that ranks above it rules)."""
    return "applied" if in_effect(entry) == verdict.stored() else "superseded"
