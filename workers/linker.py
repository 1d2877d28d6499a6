"""Link a verdict that names no id to the entries it judges, or abstain: the rule of issue 30.

Pure: a ``VerdictLink``, the verdict's outcome and time, and the project's entries in; the entries it
judges (each with its outcome) or a reason out. No Redis, no files, no clock. The rule
(docs/reference/event-schema.md, "Verdicts by link"):

0. **Window**: only entries at or before the verdict's ``ts`` and inside ``since``/``until``.
1. **Commit**: entries whose turn ended at ``link.commit`` (``commit_end``, abbreviations match) with a clean
   tree (``dirty`` not true) and that moved HEAD (``commit_start``, when known, is another commit): the judged
   tree is the one the turn left. With ``session_id``, only that session's. One links; more is ``ambiguous``.
2. **Session**: the entries of ``link.session_id``, narrowed by content when the link carries files or hunks.
   One links; more is ``ambiguous``; none is ``no_match`` (a named session is not searched past).
3. **Content**: entries all of whose files are among ``link.files`` (when given) and one of whose ``changes``
   sides (removed or added text, ``ingest.links.normalize_line``) is a ``-``/``+`` line of ``link.hunks``
   (a side cut or elided: inside one):
   each such entry links (a squash merge carries several turns). Without such a match, one entry whose files
   match links; several are ``ambiguous``; an entry sharing only some files makes it ``ambiguous``, none
   ``no_match``.
4. **Coverage** (``link.tests``, a CI run): per linked entry, failing tests that cover it (in a file it
   changed, or naming one of its modules: the agent-side rule of ``workers.extraction.outcome``) make it
   ``partial``; no failure, ``fixed``; failures elsewhere only, no verdict (``failed_elsewhere``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ingest.links import VerdictLink, normalize_line, sha_matches
from store.entry import FixEntry, Outcome
from workers.extraction.outcome import covering_tests

UNLINKED_REASONS: Final = ("no_match", "ambiguous", "failed_elsewhere")
MIN_MATCH_CHARS = 12  # a changes fragment shorter than this (``return None``) is no evidence
_ARROW = " → "
_ELIDED = "[...]"


@dataclass(frozen=True, slots=True)
class Linked:
    """What a link verdict came to: ``(entry id, outcome)`` per judged entry, the tier that linked them
    (``commit`` | ``session`` | ``content``), and one reason per entry or verdict left without a verdict."""

    targets: tuple[tuple[str, Outcome], ...] = ()
    by: str = ""
    unlinked: tuple[str, ...] = ()


def link_verdict(link: VerdictLink, outcome: Outcome, ts: float, entries: Sequence[FixEntry]) -> Linked:
    """The entries ``link`` judges and their outcome, or why none (the module docstring's rule)."""
    window = [e for e in entries if _in_window(e, link, ts)]
    found, by, reason = _find(link, window)
    if not found:
        return Linked(unlinked=(reason,))
    if not link.tests:
        return Linked(tuple((e.id, outcome) for e in found), by)
    targets: list[tuple[str, Outcome]] = []
    elsewhere: list[str] = []
    for entry in found:
        judged = coverage_outcome(link, entry)
        if judged is None:
            elsewhere.append("failed_elsewhere")
        else:
            targets.append((entry.id, judged))
    return Linked(tuple(targets), by, tuple(elsewhere))


def coverage_outcome(link: VerdictLink, entry: FixEntry) -> Outcome | None:
    """A CI run's outcome for ``entry``: ``partial`` when a failing test covers it, ``fixed`` when none
    failed, None when tests failed elsewhere only."""
    if not link.failed:
        return "fixed"
    return "partial" if covering_tests(link.failed, entry.files) else None


def _in_window(entry: FixEntry, link: VerdictLink, ts: float) -> bool:
    return (
        entry.ts <= ts
        and (link.since is None or entry.ts >= link.since)
        and (link.until is None or entry.ts <= link.until)
    )


def _find(link: VerdictLink, window: Sequence[FixEntry]) -> tuple[list[FixEntry], str, str]:
    """The linked entries, the tier and, when none, the reason."""
    if link.commit:
        made = [e for e in window if _ended_at(e, link.commit)]
        if link.session_id:
            made = [e for e in made if e.session_id == link.session_id]
        if len(made) == 1:
            return made, "commit", ""
        if made:
            return [], "", "ambiguous"
    if link.session_id:
        session = [e for e in window if e.session_id == link.session_id]
        if session and (link.files or link.hunks):
            session, _ = _by_content(link, session)
        if len(session) == 1:
            return session, "session", ""
        return [], "", "ambiguous" if session else "no_match"
    if link.files or link.hunks:
        found, reason = _by_content(link, window)
        return found, "content" if found else "", reason
    return [], "", "no_match"


def _ended_at(entry: FixEntry, commit: str) -> bool:
    """The turn ended at ``commit`` with a clean tree, having moved HEAD (when its start is known)."""
    return (
        sha_matches(entry.commit_end, commit)
        and entry.dirty is not True
        and not sha_matches(entry.commit_start, entry.commit_end)
    )


def _by_content(link: VerdictLink, entries: Sequence[FixEntry]) -> tuple[list[FixEntry], str]:
    """Entries matching ``link`` by changes (all of them) or else by files (one); or the reason."""
    added = [h[1:] for h in link.hunks if h.startswith("+")]
    removed = [h[1:] for h in link.hunks if h.startswith("-")]
    by_files = [e for e in entries if e.files and all(_file_in(f, link.files) for f in e.files)]
    if not link.files:
        by_files = [e for e in entries if e.files]
    by_changes = [e for e in by_files if _changes_in(e, added, removed)]
    if by_changes:
        return by_changes, ""
    if link.files and len(by_files) == 1:
        return by_files, ""
    if link.files and (len(by_files) > 1 or any(_file_in(f, link.files) for e in entries for f in e.files)):
        return [], "ambiguous"
    return [], "no_match"


def _file_in(path: str, files: Sequence[str]) -> bool:
    """``path`` is one of ``files``, either side possibly relative to a subdirectory of the other's root."""
    return any(path == f or f.endswith("/" + path) or path.endswith("/" + f) for f in files)


Fragment = tuple[str, bool]  # text, and whether it is the whole line (else a cut or elided part of it)


def change_sides(change: str) -> tuple[list[Fragment], list[Fragment]]:
    """The removed and added text of one ``changes`` line (``file · symbol: old → new``, ``+ new``,
    ``- old``), as fragments of at least ``MIN_MATCH_CHARS`` characters: the whole line, or the parts a
    cut (``…``) or an elision (``[...]``) left."""
    _, _, text = change.partition(": ")
    if _ARROW in text:
        old, new = text.split(_ARROW, 1)
    elif text.startswith("+ "):
        old, new = "", text[2:]
    elif text.startswith("- "):
        old, new = text[2:], ""
    else:
        return [], []
    return _fragments(old), _fragments(new)


def _fragments(side: str) -> list[Fragment]:
    whole = _ELIDED not in side and not side.endswith("…")
    parts = (normalize_line(p.strip("…")) for p in side.split(_ELIDED))
    return [(p, whole) for p in parts if len(p) >= MIN_MATCH_CHARS]


def _found(fragments: Sequence[Fragment], lines: Sequence[str]) -> bool:
    """A whole line equals one of ``lines``; a part is inside one."""
    return any(text == line if whole else text in line for text, whole in fragments for line in lines)


def _changes_in(entry: FixEntry, added: Sequence[str], removed: Sequence[str]) -> bool:
    """Whether a side of one of ``entry.changes`` is in the link's added or removed lines."""
    for change in entry.changes or ():
        old, new = change_sides(change)
        if _found(new, added) or _found(old, removed):
            return True
    return False
