"""The notes as a prompt block, and the combined block: notes first, then learned fixes, one budget.

Pure: the memory file comes in parsed, the known commits and the ceiling come in as values.

- At most ``ceiling`` notes (default 40, a starting value with no observation behind it yet; the
  ``notes_ceiling`` setting moves it), most recent first. "Most recent" is file order: the file is
  append-only for the tools that write it, so the last note is the newest; dates are optional and
  hand-edited, so they do not reorder anything. The cut falls on the oldest: "N older notes not shown".
- A note whose commit is not in a NON-EMPTY set of known commits is marked as coming from a commit no
  longer in the repository; it is never dropped. An empty set means nothing was checked: nothing is
  marked ("we did not look" must not read as "we looked and it is gone").
- "N blocks in the memory file could not be read" when headers were malformed.
- With a token budget, notes are dropped oldest first until the whole block (heading and footers
  included) fits by the store's estimate (``store.recall.prompt.estimate_tokens``, UTF-8 bytes / 3, rounded
  up); a body longer than ``BODY_CHARS`` is clipped in the prompt (never in the file).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from typing import Final

from store.entry import FixEntry
from store.notes.grammar import MEMORY_FILE, MemoryFile, Note
from store.recall.prompt import estimate_tokens, prompt_block  # one estimate for the whole combined block
from store.recall.search import Recalled

DEFAULT_CEILING: Final = 40
BODY_CHARS: Final = 600  # per note, in the prompt only
HEADING: Final = (
    f"Notes written by people on this project ({MEMORY_FILE}, reviewed in its history); "
    "they outrank the learned fixes:"
)
NOTE_STALE_MARK: Final = "(from a commit no longer in the repository)"


def stale_flags(notes: Sequence[Note], known_commits: Collection[str]) -> list[bool]:
    """Per note, whether its commit is missing from a non-empty set of known (full) commit ids.

    A note's commit may be any abbreviation: it is known when some known id starts with it. A note
    without a commit, or an empty ``known_commits``, is never stale.
    """
    if not known_commits:
        return [False] * len(notes)
    ordered = sorted(c.lower() for c in known_commits)

    def known(commit: str) -> bool:
        at = bisect_left(ordered, commit)
        return at < len(ordered) and ordered[at].startswith(commit)

    return [note.commit is not None and not known(note.commit) for note in notes]


def note_text(note: Note, *, stale: bool) -> str:
    """One note as prompt lines: ``- kind: subject (learned D)``, the stale mark, the body indented."""
    head = f"- {note.kind}: {note.subject}"
    if note.learned is not None:
        head += f" (learned {note.learned.isoformat()})"
    if stale:
        head += f" {NOTE_STALE_MARK}"
    body = note.body
    if len(body) > BODY_CHARS:
        body = body[:BODY_CHARS].rstrip() + f" … (cut; the rest is in {MEMORY_FILE})"
    lines = [head]
    if body:
        lines += [f"  {line}" if line else "" for line in body.split("\n")]
    return "\n".join(lines)


def _compose(shown: Sequence[str], hidden: int, unreadable: int) -> str:
    parts = [HEADING, *shown]
    if hidden:
        older = "older " if shown else ""
        parts.append(f"({hidden} {older}note{'s' if hidden != 1 else ''} not shown)")
    if unreadable:
        parts.append(
            f"({unreadable} block{'s' if unreadable != 1 else ''} in the memory file could not be read)"
        )
    return "\n".join(parts)


def render_notes(
    memory: MemoryFile,
    *,
    known_commits: Collection[str] = frozenset(),
    ceiling: int = DEFAULT_CEILING,
    budget_tokens: int | None = None,
    estimate: Callable[[str], int] = estimate_tokens,
) -> str:
    """The notes block for a prompt, or ``""`` when the file holds nothing (or nothing fits the budget).

    Raises ValueError for a negative ceiling or budget.
    """
    if ceiling < 0:
        raise ValueError(f"the notes ceiling must be >= 0, got {ceiling}")
    if budget_tokens is not None and budget_tokens < 0:
        raise ValueError(f"the token budget must be >= 0, got {budget_tokens}")
    notes = memory.notes
    if not notes and not memory.malformed:
        return ""
    newest_first = list(reversed(notes))[:ceiling]
    flags = stale_flags(newest_first, known_commits)
    texts = [note_text(note, stale=flag) for note, flag in zip(newest_first, flags, strict=True)]
    unreadable = memory.unreadable_blocks
    shown = len(texts)
    block = _compose(texts, len(notes) - shown, unreadable)
    while budget_tokens is not None and estimate(block) > budget_tokens:
        if shown == 0:
            return ""
        shown -= 1
        block = _compose(texts[:shown], len(notes) - shown, unreadable)
    return block


SEPARATOR: Final = "\n\n"


def combined_prompt_block(
    memory: MemoryFile | None,
    recalled: Sequence[Recalled] | Sequence[FixEntry],
    budget_tokens: int = 600,
    *,
    known_commits: Collection[str] | None = None,
    workspace: str | None = None,
    now: float,
    ceiling: int = DEFAULT_CEILING,
) -> str:
    """Person-written notes first (labelled), then the learned fixes, all within ``budget_tokens``.

    Notes outrank learned fixes, with one exception: when recall found something, room is kept for the
    most relevant fix (at most half the budget), so a long memory file cannot crowd out the one fix
    recall judged relevant to this task. Whatever the notes leave goes to the learned fixes
    (``store.prompt_block``). ``now`` is unix seconds; ``known_commits`` and ``workspace`` mark stale
    notes and fixes as in ``render_notes`` and ``prompt_block``. ``""`` when there is nothing to say.
    Raises ValueError for a negative budget or ceiling.
    """
    if budget_tokens < 0:
        raise ValueError(f"the token budget must be >= 0, got {budget_tokens}")
    known = known_commits or frozenset()

    def fixes(budget: int) -> str:
        if budget <= 0 or not recalled:
            return ""
        return prompt_block(recalled, budget, known_commits=known, workspace=workspace, now=now)

    reserve = 0
    if recalled:
        first = prompt_block(recalled[:1], budget_tokens, known_commits=known, workspace=workspace, now=now)
        if first:
            reserve = min(estimate_tokens(SEPARATOR) + estimate_tokens(first), budget_tokens // 2)
    notes_block = render_notes(
        memory or MemoryFile(), known_commits=known, ceiling=ceiling, budget_tokens=budget_tokens - reserve
    )
    if not notes_block:
        return fixes(budget_tokens)
    learned = fixes(budget_tokens - estimate_tokens(notes_block + SEPARATOR))
    return notes_block + SEPARATOR + learned if learned else notes_block
