"""What an entry shows beyond its documented fields. Pure. The table's filters and paging are
``store.listing``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol, TypeVar

from store.entry import FixEntry
from store.summary import LogSummary
from store.verdicts import history, in_effect

FIRST_EXTRAS: Final = ("changes", "outcome_source")  # fields other parts add: shown first, by name
# The fields the entry page shows by name; any other (an extra line field, or a field ``FixEntry`` gains
# later) is shown by ``extras``.
SHOWN: Final = frozenset(
    {"id", "ts", "project", "task", "files", "symbols", "errors", "tests", "outcome", "solution", "tags",
     "commit", "event_id", "extractor", "supersedes", "verdicts"}
)  # fmt: skip
# How a verdict found its entry (``Verdict.via``), for people.
VIA_LABELS: Final = {
    "id": "named the entry (id or event id)",
    "commit": "the commit the turn ended at",
    "session": "the agent session",
    "content": "the entry's changes in the commit's diff",
    "": "not recorded (an older verdict)",
}


# What a person reads for the fields fixmem itself adds; any other shows as its name in words.
LABELS: Final = {
    "changes": "What changed",
    "outcome_source": "Outcome decided by",
    "agent_outcome": "The agent's own outcome",
    "verdict": "Verdict",
}
_SOURCES: Final = {"agent-tests": "the agent's own tests, after its last edit"}


@dataclass(frozen=True)
class Extra:
    """A field an entry carries beyond the documented ones: its name, a label for people, and its value
    as text or as lines."""

    name: str
    text: str | None
    lines: tuple[str, ...] | None
    label: str = ""


def _utc(ts: object) -> str | None:
    if isinstance(ts, int | float) and not isinstance(ts, bool):
        return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return None


def describe_verdict(value: Any) -> str | None:
    """A verdict (``{source, outcome, ts, detail}``) as a sentence: ``fixed, from ci, on 2026-09-14 10:00
    UTC: <detail>``; None for a value of another shape (shown as JSON instead)."""
    if not isinstance(value, dict) or not isinstance(value.get("outcome"), str):
        return None
    words = [str(value["outcome"])]
    if value.get("source"):
        words.append(f"from {value['source']}")
    if (when := _utc(value.get("ts"))) is not None:
        words.append(f"on {when}")
    text = ", ".join(words)
    detail = value.get("detail")
    return f"{text}: {detail}" if detail else text


def _text(name: str, value: Any) -> str:
    if name == "outcome_source" and isinstance(value, str):
        source = value.removeprefix("verdict:")
        return _SOURCES.get(value) or (f"a verdict from {source}" if source != value else value)
    if "verdict" in name and (sentence := describe_verdict(value)) is not None:
        return sentence
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _as_extra(name: str, value: Any) -> Extra:
    label = LABELS.get(name) or name.replace("_", " ").capitalize()
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return Extra(name, None, tuple(value), label)
    return Extra(name, _text(name, value), None, label)


def extras(entry: FixEntry) -> list[Extra]:
    """The entry's extra fields (``changes``, ``outcome_source``, then verdicts, then the rest, by name).

    Fields other parts of fixmem add later (change summaries, judged outcomes), as extra line fields or as
    declared ``FixEntry`` fields, show up here as they are, without this page knowing them; ``None``
    values are left out.
    """
    found = {k: v for k, v in entry.model_dump(mode="json").items() if k not in SHOWN and v is not None}

    def order(name: str) -> tuple[int, str]:
        if name in FIRST_EXTRAS:
            return (FIRST_EXTRAS.index(name), name)
        return (len(FIRST_EXTRAS) if "verdict" in name else len(FIRST_EXTRAS) + 1, name)

    return [_as_extra(name, found[name]) for name in sorted(found, key=order)]


@dataclass(frozen=True)
class VerdictRow:
    """A verdict the entry received, as the entry page lists it."""

    source: str
    outcome: str
    when: str
    via: str  # the link reason, in words (``VIA_LABELS``)
    detail: str
    in_effect: bool  # it decides the entry's outcome


def verdict_rows(entry: FixEntry) -> list[VerdictRow]:
    """Every verdict ``entry`` keeps (``store.verdicts.history``), newest first. Pure."""
    current = in_effect(entry)
    return [
        VerdictRow(
            v.source, v.outcome, _utc(v.ts) or "", VIA_LABELS.get(v.via, v.via), v.detail, v == current
        )
        for v in reversed(history(entry))
    ]


class _HasSummary(Protocol):
    @property
    def summary(self) -> LogSummary: ...


# The projects page's orders (the first is the default): newest activity, name, most fixes, fixed ratio.
PROJECT_SORTS: Final[dict[str, Callable[[LogSummary], Any]]] = {
    "recent": lambda s: -(s.newest_ts or 0.0),
    "name": lambda s: (s.project or "").lower(),
    "fixes": lambda s: -s.total,
    "fixed": lambda s: -s.ratios["fixed"],
}


R = TypeVar("R", bound=_HasSummary)


def project_table(rows: Sequence[R], *, text: str = "", sort: str = "recent") -> list[R]:
    """The projects page's rows whose key contains ``text`` (any case), in the order ``sort`` names
    (``PROJECT_SORTS``; an unknown one is the default), ties by key. Pure."""
    key = PROJECT_SORTS.get(sort, PROJECT_SORTS["recent"])
    needle = text.strip().lower()
    kept = [r for r in rows if needle in (r.summary.project or "").lower()]
    return sorted(kept, key=lambda r: (key(r.summary), r.summary.project or ""))
