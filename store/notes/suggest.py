"""The review queue: notes the fix log suggests, and a fix turned into a note once a person chose it. Pure.

Nothing here writes: ``suggest_notes`` proposes, a person reads, ``fixmem notes promote <fix-id>``
writes. Two signals, both derived from the log at read time:

- **A fix that did not hold**: a ``fixed`` entry that a later ``partial`` entry showed regressed
  (``store.history.regressions``).
- **An error that keeps coming back**: the same error signature (compared canonically) in
  ``min_repeats`` or more ``fixed`` entries: fixed three times means it will be hit a fourth.

A suggestion is answered by promoting its own fix (its id then appears in a note's body) and is not made
again; promoting a fix answers only that fix's suggestion, not another one that merely lists it among its
evidence. A later fix of a repeated error is a new fix to promote: the note did not stop the error.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Final

from store.entry import FixEntry
from store.errorsig import canonical_error
from store.notes.grammar import Kind, MemoryFile, Note, new_note
from store.redact import redact

MIN_REPEATS: Final = 3
SUBJECT_CHARS: Final = 120
FIELD_CHARS: Final = 400
_FIX_ID = re.compile(r"\bfix-[0-9a-f]{16}\b")


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A note the log suggests: what to promote (``fix_id``), as which kind, why, and the evidence."""

    kind: Kind
    fix_id: str
    subject: str
    reason: str
    evidence: tuple[str, ...]  # ids of the entries behind the suggestion, oldest first


def day(ts: float) -> str:
    """The UTC date of unix seconds ``ts``, ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(ts, tz=UTC).date().isoformat()


def _flat(text: str, limit: int) -> str:
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def promoted_ids(memory: MemoryFile) -> set[str]:
    """Fix ids named in the bodies of the memory file's notes (promoted notes name their source)."""
    return {match for note in memory.notes for match in _FIX_ID.findall(note.body)}


def suggest_notes(
    entries: Sequence[FixEntry],
    *,
    regressed: Mapping[str, str],
    already_promoted: Collection[str] = frozenset(),
    min_repeats: int = MIN_REPEATS,
) -> list[Suggestion]:
    """Suggestions from a project's log (log order): fixes that did not hold, then repeated errors.

    One suggestion per fix to promote: the latest fix a failure undid, the latest fix of a repeated
    error (both reasons when they are the same fix).

    ``regressed`` maps a fixed entry's id to the later partial entry's id (``store.history.regressions``).
    """
    out = _did_not_hold(entries, regressed, already_promoted)  # by the fix to promote, in order
    for _, shown, fixes in _repeated_errors(entries, min_repeats):
        latest = fixes[-1]
        if latest.id in already_promoted:
            continue
        reason = f"fixed {len(fixes)} times, {day(fixes[0].ts)} to {day(latest.ts)}"
        if latest.id in out:  # the same fix to promote: one suggestion, both reasons
            known = out[latest.id]
            out[latest.id] = replace(known, reason=f"{known.reason}; {reason}")
            continue
        out[latest.id] = Suggestion(
            kind="gotcha",
            fix_id=latest.id,
            subject=f"keeps coming back: {_flat(shown, SUBJECT_CHARS)}",
            reason=reason,
            evidence=tuple(f.id for f in fixes),
        )
    return list(out.values())


def _did_not_hold(
    entries: Sequence[FixEntry], regressed: Mapping[str, str], already_promoted: Collection[str]
) -> dict[str, Suggestion]:
    """One suggestion per failure that undid fixes (however many), by the latest fix it undid."""
    by_id = {e.id: e for e in entries}
    out: dict[str, Suggestion] = {}
    regressed_by: dict[str, list[FixEntry]] = {}
    for entry in entries:
        later_id = regressed.get(entry.id)
        if entry.outcome == "fixed" and later_id is not None:
            regressed_by.setdefault(later_id, []).append(entry)
    for later_id, undone in regressed_by.items():
        latest = undone[-1]
        if latest.id in already_promoted:  # answered; an earlier fix in the evidence may be another's
            continue
        later = by_id.get(later_id)
        when = f" on {day(later.ts)}" if later is not None else ""
        earlier = f" (and {len(undone) - 1} earlier fix(es))" if len(undone) > 1 else ""
        out[latest.id] = Suggestion(
            kind="gotcha",
            fix_id=latest.id,
            subject=f"a fix that did not hold: {_flat(latest.task, SUBJECT_CHARS) or latest.id}",
            reason=f"fixed on {day(latest.ts)}{earlier}, then {later_id} failed again{when}",
            evidence=(*(f.id for f in undone), later_id),
        )
    return out


def _repeated_errors(entries: Sequence[FixEntry], min_repeats: int) -> list[tuple[str, str, list[FixEntry]]]:
    """Error signatures at least ``min_repeats`` fixes hit, most fixes first: (signature, the error as
    first shown, the fixes in log order)."""
    groups: dict[str, list[FixEntry]] = {}
    shown: dict[str, str] = {}
    for entry in entries:
        if entry.outcome != "fixed":
            continue
        for signature in dict.fromkeys(canonical_error(e) for e in entry.errors if e.strip()):
            groups.setdefault(signature, []).append(entry)
            shown.setdefault(signature, next(e for e in entry.errors if canonical_error(e) == signature))
    repeated = [(sig, fixes) for sig, fixes in groups.items() if len(fixes) >= min_repeats]
    repeated.sort(key=lambda item: (-len(item[1]), item[0]))
    return [(sig, shown[sig], fixes) for sig, fixes in repeated]


def note_from_fix(
    entry: FixEntry, kind: str, *, learned: date, commit: str | None, subject: str | None = None
) -> Note:
    """The note a person promotes a fix into: its task as subject, what was done as body (redacted).

    The body names the fix id, so the promotion is not suggested again. Raises NoteRejected for an
    unknown kind or an empty subject.
    """
    title = subject if subject is not None else _flat(entry.task, SUBJECT_CHARS)
    lines = []
    if entry.solution.strip():
        lines.append(f"Solution: {_flat(entry.solution, FIELD_CHARS)}")
    if entry.errors:
        lines.append(f"Error: {_flat(entry.errors[0], FIELD_CHARS)}")
    if entry.files:
        lines.append(f"Files: {_flat(', '.join(entry.files), FIELD_CHARS)}")
    if entry.tests is not None:
        result = "passed" if entry.tests.ok else "failed"
        summary = f" ({_flat(entry.tests.summary, 120)})" if entry.tests.summary.strip() else ""
        lines.append(f"Tests: {_flat(entry.tests.command, 200)} {result}{summary}")
    lines.append(f"Promoted from {entry.id} ({entry.outcome}, {day(entry.ts)}).")
    return new_note(kind, title, "\n".join(lines), learned=learned, commit=commit)
