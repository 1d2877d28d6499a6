"""A project's entries as a table: filters from a query string, matching, paging. Pure.

Filters (all optional, combined with AND): ``outcome`` (one of fixed / partial / unverified), ``file``
(a part of a touched file's path), ``error`` (a part of an error), ``since`` / ``until`` (UTC days,
``YYYY-MM-DD``, both included) and ``q`` (a part of the task, solution, files, symbols, errors or tags).
Text filters ignore case. The table is newest first, ``PER_PAGE`` a page. What a row shows is up to
the surface.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final, Generic, TypeVar

from store.entry import OUTCOMES, FixEntry

PER_PAGE: Final = 50
MAX_FILTER_CHARS: Final = 500
T = TypeVar("T")


def _day(value: str, name: str, problems: list[str]) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        problems.append(f"{name}: expected a day as YYYY-MM-DD")
        return None


@dataclass(frozen=True)
class EntryFilter:
    """What the entries table is narrowed to (see the module docstring)."""

    outcome: str = ""
    file: str = ""
    error: str = ""
    text: str = ""
    since: date | None = None
    until: date | None = None

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> tuple[EntryFilter, list[str]]:
        """The filter of a query string, and a readable problem for each value that was ignored."""
        problems: list[str] = []

        def text(name: str) -> str:
            value = params.get(name, "").strip()
            if len(value) > MAX_FILTER_CHARS:
                problems.append(f"{name}: cut to {MAX_FILTER_CHARS} characters")
            return value[:MAX_FILTER_CHARS]

        outcome = params.get("outcome", "")
        if outcome and outcome not in OUTCOMES:
            problems.append(f"outcome: one of {', '.join(OUTCOMES)}")
            outcome = ""
        since = _day(params.get("since", ""), "since", problems)
        until = _day(params.get("until", ""), "until", problems)
        found = cls(outcome, text("file"), text("error"), text("q"), since, until)
        return found, problems

    @property
    def active(self) -> bool:
        """Whether anything is filtered."""
        return bool(self.outcome or self.file or self.error or self.text or self.since or self.until)

    def params(self) -> dict[str, str]:
        """The filter as query parameters (for links that keep it: paging)."""
        values = {
            "outcome": self.outcome,
            "file": self.file,
            "error": self.error,
            "q": self.text,
            "since": self.since.isoformat() if self.since else "",
            "until": self.until.isoformat() if self.until else "",
        }
        return {k: v for k, v in values.items() if v}

    def matches(self, entry: FixEntry) -> bool:
        """Whether ``entry`` passes every given filter."""
        if self.outcome and entry.outcome != self.outcome:
            return False
        if self.since and entry.ts < _midnight(self.since):
            return False
        if self.until and entry.ts >= _midnight(self.until + timedelta(days=1)):
            return False
        if self.file and not _has(entry.files, self.file):
            return False
        if self.error and not _has(entry.errors, self.error):
            return False
        if self.text:
            fields = [entry.task, entry.solution, *entry.files, *entry.symbols, *entry.errors, *entry.tags]
            return _has(fields, self.text)
        return True


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def _has(values: Sequence[str], part: str) -> bool:
    wanted = part.casefold()
    return any(wanted in v.casefold() for v in values)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its items, its number (from 1), how many pages and items in all."""

    items: list[T]
    number: int
    pages: int
    total: int


def paginate(items: Sequence[T], number: int, per_page: int = PER_PAGE) -> Page[T]:
    """Page ``number`` (clamped to 1..pages) of ``items``."""
    pages = max(1, math.ceil(len(items) / per_page))
    number = min(max(1, number), pages)
    start = (number - 1) * per_page
    return Page(list(items[start : start + per_page]), number, pages, len(items))


def page_number(raw: str | None) -> int:
    """A page number from the query string (1 when absent or not a number)."""
    try:
        return max(1, int(raw or "1"))
    except ValueError:
        return 1


def table(entries: Sequence[FixEntry], wanted: EntryFilter) -> list[FixEntry]:
    """The entries passing ``wanted``, newest first (log order breaks ties: the later line first)."""
    kept = [(e.ts, i, e) for i, e in enumerate(entries) if wanted.matches(e)]
    kept.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [e for _, _, e in kept]
