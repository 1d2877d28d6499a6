"""Scan bounds: how much of a turn the extractor reads, so one huge log can never stall a worker.

Pure. ``scan_window`` keeps a head and a tail of an output plus, from a bounded middle region, the lines
that look like errors, test summaries or diff headers. ``select_events`` keeps the first and last tool
events of a turn past ``max_tool_events``. The work per turn is therefore bounded by
``max_tool_events * (max_input_chars + head_bytes + tail_bytes + middle_scan_chars)`` whatever the
turn's size; ``window_bound`` states the per-output bound that tests check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

TRUNCATION_MARK = "\n[... fixmem: output elided ...]\n"


@dataclass(frozen=True)
class Limits:
    """Configurable scan bounds; sizes count characters of the decoded text (~bytes for ASCII logs)."""

    head_bytes: int = 16_384  # kept from the start of every output
    tail_bytes: int = 16_384  # kept from the end of every output
    middle_scan_chars: int = 2_000_000  # of the middle, how much (nearest the tail) is searched for lines
    max_interesting_lines: int = 400  # middle lines kept per output
    max_line_chars: int = 500  # a kept middle line is cut to this
    max_tool_events: int = 2_000  # events past this: the first quarter and the last three quarters kept
    max_input_chars: int = 200_000  # tool input text (commands, patches, file contents) read per event
    max_errors: int = 10
    max_error_chars: int = 200
    max_symbols: int = 20
    max_files: int = 200
    max_task_chars: int = 500
    max_solution_chars: int = 240


# Words that make a middle line worth keeping: error shapes, test summaries, diff and patch headers.
_INTERESTING = re.compile(
    r"Error|Exception|Traceback|FAIL|panic|error|passed|failed|passing|failing|Ran \d|test result|"
    r"BUILD|Tests|^ok |^E  |^diff --git|^\+\+\+ |^--- |^\*\*\* (?:Update|Add|Delete) File|not found|"
    r"No such file|#\s*(?:pass|fail|tests)\b|ℹ (?:pass|fail|tests)\b|examples?,|congratulations",
    re.MULTILINE,
)


def window_bound(limits: Limits) -> int:
    """The most characters ``scan_window`` can return for one output."""
    middle = limits.max_interesting_lines * (limits.max_line_chars + 1)
    return limits.head_bytes + limits.tail_bytes + middle + 2 * len(TRUNCATION_MARK)


def scan_window(text: str, limits: Limits) -> str:
    """Head + interesting middle lines + tail of ``text``; the whole text when it is short enough."""
    if len(text) <= limits.head_bytes + limits.tail_bytes:
        return text
    head_end = text.rfind("\n", 0, limits.head_bytes)
    head_end = limits.head_bytes if head_end <= 0 else head_end + 1
    tail_start = text.find("\n", len(text) - limits.tail_bytes)
    tail_start = len(text) - limits.tail_bytes if tail_start < 0 else tail_start + 1
    if tail_start <= head_end:
        return text
    scan_from = max(head_end, tail_start - limits.middle_scan_chars)
    kept: list[str] = []
    last_line_start = -1
    for match in _INTERESTING.finditer(text, scan_from, tail_start):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if line_start == last_line_start:
            continue
        last_line_start = line_start
        line_end = text.find("\n", match.start(), tail_start)
        line_end = tail_start if line_end < 0 else line_end
        kept.append(text[line_start:line_end][: limits.max_line_chars])
        if len(kept) >= limits.max_interesting_lines:
            break
    middle = "\n".join(kept)
    return text[:head_end] + TRUNCATION_MARK + middle + TRUNCATION_MARK + text[tail_start:]


def select_events(events: Sequence[T], limits: Limits) -> list[T]:
    """The events to read: all of them, or the first quarter and last three quarters of the budget."""
    if len(events) <= limits.max_tool_events:
        return list(events)
    head = limits.max_tool_events // 4
    tail = limits.max_tool_events - head
    return [*events[:head], *events[len(events) - tail :]]


class WordSet:
    """Whether a text holds any of some words: one compiled alternation for short texts (a command line:
    faster than ``any(w in text …)``), plain substring tests for long ones (a regex alternation costs
    time per character; ``str.__contains__`` runs at C speed). Figures: docs/performance.md."""

    SHORT = 2_000

    def __init__(self, words: Sequence[str]) -> None:
        self.words = tuple(words)
        self._pattern = re.compile("|".join(re.escape(w) for w in self.words))

    def __iter__(self) -> Iterator[str]:
        return iter(self.words)

    def found_in(self, text: str) -> bool:
        """Whether ``text`` holds one of the words."""
        if len(text) <= self.SHORT:
            return self._pattern.search(text) is not None
        return any(word in text for word in self.words)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (inputs are read up to a bound, never whole)."""
    return text if len(text) <= limit else text[:limit]
