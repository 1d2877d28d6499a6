"""What an entry shows beyond its documented fields. Pure. The table's filters and paging are
``store.listing``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from store.entry import FixEntry

FIRST_EXTRAS: Final = ("changes", "outcome_source")  # fields other parts add: shown first, by name
# The fields the entry page shows by name; any other (an extra line field, or a field ``FixEntry`` gains
# later) is shown by ``extras``.
SHOWN: Final = frozenset(
    {"id", "ts", "project", "task", "files", "symbols", "errors", "tests", "outcome", "solution", "tags",
     "commit", "event_id", "extractor", "supersedes"}
)  # fmt: skip


@dataclass(frozen=True)
class Extra:
    """A field an entry carries beyond the documented ones: its name and its value as text or as lines."""

    name: str
    text: str | None
    lines: tuple[str, ...] | None


def _as_extra(name: str, value: Any) -> Extra:
    if isinstance(value, str):
        return Extra(name, value, None)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return Extra(name, None, tuple(value))
    return Extra(name, json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str), None)


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
