"""The "Past fixes in this project" prompt block, cut to a token budget.

``render`` is pure (items, budget, ``now`` in, text out). ``prompt_block`` is the public entry point: it
also checks, when given a workspace, which files still exist (the only I/O here).

Token estimate: ``ceil(utf-8 bytes / 3)``. Common BPE tokenizers average about 4 bytes per token on
English prose and about 3 on code and paths; CJK text costs about one token per 3-byte character. Using
3 over-estimates ordinary text, so a block that fits the estimate fits the model's real count. The whole
block (header included) never exceeds ``budget_tokens`` by this estimate: entries that do not fit are
left out, and a first entry too long on its own is shortened with "…".

Closely related fixes come first, each with its files, error, solution and why it matched, and under it
up to three ``change:`` lines (what the fix changed: ``file · symbol: old → new``); possibly related ones
follow under ``Possibly related:``, one short line each (task, first file, first change, age), so a
harness reading the block knows which to trust. An entry whose change lines do not fit is shown with
fewer of them before it is left out.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from store.entry import FixEntry
from store.recall.search import CLOSE, Recalled
from store.redact import redact
from store.staleness import stale_marks, workspace_checker

HEADER = "Past fixes in this project:"
POSSIBLE_HEADER = "Possibly related:"
MAX_POSSIBLE_TASK_CHARS = 100
BYTES_PER_TOKEN = 3
MAX_TASK_CHARS = 160
MAX_ERROR_CHARS = 160
MAX_SOLUTION_CHARS = 240
MAX_FILES_SHOWN = 3
MAX_CHANGES_SHOWN = 3  # change lines under a closely related fix; a possibly related one shows one
MAX_CHANGE_CHARS = 200
MAX_SHORT_CHANGE_CHARS = 120
ELLIPSIS = "…"


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see the module docstring): ``ceil(utf-8 bytes / 3)``."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / BYTES_PER_TOKEN)


@dataclass(frozen=True)
class PromptItem:
    """One entry to render, with what recall and the staleness checks found about it."""

    entry: FixEntry
    regressed: bool = False
    stale: tuple[str, ...] = ()
    close: bool = True  # "closely related" (full line) or "possibly related" (short line)
    why: str = ""  # ``Reasons.summary()``: what it shares with the task


def format_age(seconds: float) -> str:
    """A short age: ``just now``, ``5m ago``, ``3h ago``, ``12d ago``, ``4mo ago``, ``2y ago``."""
    if seconds < 60:
        return "just now"
    for unit, size in (("y", 365 * 86400), ("mo", 30 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and (unit != "mo" or seconds >= 60 * 86400):
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + ELLIPSIS


def render_line(item: PromptItem, now: float, changes: int = MAX_CHANGES_SHOWN) -> str:
    """One entry: a line with outcome, task, files, main error, solution, age and marks, then up to
    ``changes`` of its change lines, each indented under it (``  change: file · symbol: old → new``)."""
    entry = item.entry
    outcome = entry.outcome + (", regressed later" if item.regressed else "")
    parts = [f"- [{outcome}] {_clip(entry.task, MAX_TASK_CHARS) or '(no task text)'}"]
    if entry.files:
        shown = ", ".join(entry.files[:MAX_FILES_SHOWN])
        extra = len(entry.files) - MAX_FILES_SHOWN
        parts.append("files: " + _clip(shown, 200) + (f" (+{extra} more)" if extra > 0 else ""))
    if entry.errors:
        parts.append("error: " + _clip(entry.errors[0], MAX_ERROR_CHARS))
    if entry.solution.strip():
        parts.append("solution: " + _clip(entry.solution, MAX_SOLUTION_CHARS))
    if item.why:
        parts.append(_clip(item.why, MAX_ERROR_CHARS))
    age = format_age(max(now - entry.ts, 0.0))
    parts.append(age + "".join(f" ({mark})" for mark in item.stale))
    below = [f"  change: {_clip(c, MAX_CHANGE_CHARS)}" for c in (entry.changes or [])[: max(changes, 0)]]
    return redact("\n".join([" | ".join(parts), *below]))


def render_short(item: PromptItem, now: float, changes: int = 1) -> str:
    """A possibly related entry as a short line: outcome, task, first file, its first change, age, marks."""
    entry = item.entry
    outcome = entry.outcome + (", regressed later" if item.regressed else "")
    parts = [f"- [{outcome}] {_clip(entry.task, MAX_POSSIBLE_TASK_CHARS) or '(no task text)'}"]
    if entry.files:
        parts.append("files: " + _clip(entry.files[0], 120) + (" (+more)" if len(entry.files) > 1 else ""))
    if entry.changes and changes > 0:
        parts.append("change: " + _clip(entry.changes[0], MAX_SHORT_CHANGE_CHARS))
    age = format_age(max(now - entry.ts, 0.0))
    parts.append(age + "".join(f" ({mark})" for mark in item.stale))
    return redact(" | ".join(parts))


def _fit(text: str, max_bytes: int) -> str:
    """``text`` cut (with "…") so its UTF-8 form is at most ``max_bytes``; "" if even "…" does not fit."""
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    room = max_bytes - len(ELLIPSIS.encode("utf-8"))
    if room <= 0:
        return ""
    cut = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    return cut + ELLIPSIS


MIN_SHORTENED_TEXT = 12  # characters of task text a shortened line keeps at least, after its outcome


def _min_shortened(item: PromptItem) -> int:
    """Shortest useful shortened line: ``- [outcome] `` plus a few words of the task."""
    return len(f"- [{item.entry.outcome}] ") + MIN_SHORTENED_TEXT


def _variants(item: PromptItem, now: float) -> list[str]:
    """The item's renderings, most change lines first, down to none."""
    most = MAX_CHANGES_SHOWN if item.close else 1
    count = min(len(item.entry.changes or []), most)
    draw = render_line if item.close else render_short
    return [draw(item, now, n) for n in range(count, -1, -1)]


def render(items: Sequence[PromptItem], budget_tokens: int, *, now: float) -> str:
    """The block for ``items`` (most relevant first) within ``budget_tokens``; "" for no items. Pure."""
    if not items or estimate_tokens(HEADER) > budget_tokens:
        return ""
    max_bytes = budget_tokens * BYTES_PER_TOKEN
    block = HEADER
    ordered = [item for item in items if item.close] + [item for item in items if not item.close]
    for i, item in enumerate(ordered):
        lines = _variants(item, now)  # with all its change lines, then fewer: the first that fits is kept
        if not item.close and (i == 0 or ordered[i - 1].close):
            lines = [POSSIBLE_HEADER + "\n" + line for line in lines]
        fitting = next(
            (c for line in lines if estimate_tokens(c := block + "\n" + line) <= budget_tokens), None
        )
        if fitting is not None:
            block = fitting
            continue
        line = lines[-1]
        if i == 0:  # the most relevant entry alone is too long: shorten it rather than say nothing
            room = max_bytes - len((block + "\n").encode("utf-8"))
            short = _fit(line, room)
            if len(short) >= _min_shortened(item):  # its outcome and a few words, or nothing at all
                block = block + "\n" + short
        break
    return block if block != HEADER else ""


def prompt_block(
    recalled: Sequence[Recalled] | Sequence[FixEntry],
    budget_tokens: int = 600,
    *,
    known_commits: Collection[str] | None = None,
    workspace: str | None = None,
    now: float,
) -> str:
    """The prompt block for ``Recalled`` results or plain ``FixEntry`` values; "" when there are none.

    Entries whose commit is not in a non-empty ``known_commits`` are marked ``(stale: commit gone)``;
    with a ``workspace``, entries whose files are gone from it are marked ``(stale: file gone: …)``.
    Marked, never dropped. ``now`` is unix seconds (for the ages).
    """
    exists = workspace_checker(workspace)
    items: list[PromptItem] = []
    for value in recalled:
        if isinstance(value, Recalled):
            entry, regressed, earlier = value.entry, value.regressed, value.stale
            close, why = value.tier == CLOSE, value.reasons.summary()
        elif isinstance(value, FixEntry):
            entry, regressed, earlier, close, why = value, False, (), True, ""
        else:
            raise TypeError(f"prompt_block takes Recalled or FixEntry values, not {type(value).__name__}")
        marks = stale_marks(entry, known_commits=known_commits, file_exists=exists)
        items.append(PromptItem(entry, regressed, tuple(dict.fromkeys(earlier + marks)), close, why))
    return render(items, budget_tokens, now=now)
