"""Error signatures as recall compares them: the same error, one that may be it, the same type. Pure.

Extraction keeps an error *as the runner printed it* and prefers the longer of two overlapping lines,
so a real pytest failure is stored as ``tests/test_net.py::test_connect - RuntimeError: could not
connect``, Go's as ``--- FAIL: TestAdd``, jest's as ``● add › adds numbers``, unittest's as ``FAIL:
test_add (test_calc.AddTests.test_add)``. An agent asking about the same failure passes what *it* saw:
the bare ``RuntimeError: could not connect``, the ``E   …`` line, the ``FAILED …`` line, ``--- FAIL:
TestAdd (0.00s)``. ``store.errorsig.error_parts`` reads either into the same ``ErrorParts`` (test, type,
text).

Two signatures are the *same error* (``same_error``) when nothing they both state disagrees (test, type,
text) and they agree on the test or on the text; they share a *type* when their kinds are equal. Text is
compared canonically (``store.errorsig.canonical_error``: whitespace, case, numbers, hex,
``file:line:col`` positions), so a raw line meets its normalized form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from store.errorsig import MIN_CUT_CHARS, RUNNER_PREFIX, ErrorParts, error_parts

_WORD_CHAR = re.compile(r"\w")
_HEAD = re.compile(r"\W*\w*")  # a text's first word, with what precedes it


def query_error_parts(signature: str, workspace: str | None = None) -> ErrorParts:
    """``error_parts`` of an error an agent passed, with its workspace's absolute prefix taken off."""
    if workspace and workspace.strip("/"):
        signature = signature.replace(workspace.rstrip("/") + "/", "")
    return error_parts(signature)


def error_words(signature: str) -> str:
    """The text of ``signature`` that says what went wrong, for matching by words: the runner's prefix
    (``FAILED``, ``E   ``) and the error type's name go, the test id and the message stay.

    The type is evidence once, through the error signal's type share; left in the words, a rare type
    name (``ValidationError``) would count again as a distinctive keyword of every entry of that type.
    """
    text = RUNNER_PREFIX.sub("", signature, count=1)
    kind = error_parts(signature).kind
    if kind:
        name = re.compile(rf"(?<![\w.])(?:[\w$]+\.)*{re.escape(kind)}\b", re.IGNORECASE)
        text = name.sub(" ", text, count=1)
    return text


def _texts_agree(a: ErrorParts, b: ErrorParts) -> bool | None:
    """Whether the texts say the same (a cut text: by prefix); None when they cannot be compared."""
    if not a.comparable or not b.comparable:
        return None
    if not a.truncated and not b.truncated:
        return a.core == b.core
    short, long = (a, b) if len(a.core) <= len(b.core) else (b, a)
    return long.core.startswith(short.core) if short.truncated else None


def _disagree(a: ErrorParts, b: ErrorParts) -> bool:
    """Whether both state a test, or both an error type, and these differ."""
    return bool((a.test and b.test and a.test != b.test) or (a.kind and b.kind and a.kind != b.kind))


def same_error(a: ErrorParts, b: ErrorParts) -> bool:
    """Whether two signatures are the same error: no stated test, type or text disagrees, and they
    agree on the test or the text."""
    if _disagree(a, b):
        return False
    texts = _texts_agree(a, b)
    if texts is False:
        return False
    return texts is True or bool(a.test and a.test == b.test)


def overlapping_errors(a: ErrorParts, b: ErrorParts) -> bool:
    """Whether two signatures may be one error: the same error, or one text the other's beginning up to
    a word boundary (a runner or a writer cut it without a mark: ``missing go.sum entry for module
    providing package x`` and ``… package x (imported by y)``), with no test or type disagreeing."""
    if _disagree(a, b):
        return False
    if same_error(a, b):
        return True
    if not a.comparable or not b.comparable:
        return False
    short, long = (a, b) if len(a.core) <= len(b.core) else (b, a)
    return (
        len(short.message) >= MIN_CUT_CHARS
        and long.core.startswith(short.core)
        and _WORD_CHAR.match(long.core, len(short.core)) is None
    )


def _head(core: str) -> str:
    """The text up to the end of its first word: two texts one of which begins the other at a word
    boundary share it (``overlapping_errors``)."""
    match = _HEAD.match(core)
    return match.group() if match else ""


Row = tuple[int, ErrorParts]


class ErrorIndex:
    """Rows' error signatures, looked up by text, test and type (for recall and regressions)."""

    def __init__(self, rows: Iterable[tuple[int, Sequence[str]]] = ()) -> None:
        """Index ``(row, signatures)`` pairs."""
        self._by_core: dict[str, list[Row]] = {}
        self._by_prefix: dict[str, list[Row]] = {}  # cut texts, by their first MIN_CUT_CHARS
        self._by_test: dict[str, list[Row]] = {}
        self._by_kind: dict[str, set[int]] = {}
        self._by_head: dict[str, list[Row]] = {}  # comparable texts, by ``_head``
        for row, signatures in rows:
            self.add(row, signatures)

    def add(self, row: int, signatures: Sequence[str]) -> None:
        """Index the signatures of ``row`` (blank ones are ignored)."""
        for signature in signatures:
            if not signature.strip():
                continue
            parts = error_parts(signature)
            if parts.comparable:
                index = self._by_prefix if parts.truncated else self._by_core
                key = parts.core[:MIN_CUT_CHARS] if parts.truncated else parts.core
                index.setdefault(key, []).append((row, parts))
                self._by_head.setdefault(_head(parts.core), []).append((row, parts))
            if parts.test:
                self._by_test.setdefault(parts.test, []).append((row, parts))
            if parts.kind:
                self._by_kind.setdefault(parts.kind, set()).add(row)

    def same(self, query: ErrorParts) -> set[int]:
        """Rows holding a signature that is the same error as ``query`` (``same_error``)."""
        candidates: list[Row] = []
        if query.comparable:
            if query.truncated:  # a cut query text: rare, so a scan is fine
                candidates += [
                    r for core, rows in self._by_core.items() if core.startswith(query.core) for r in rows
                ]
            else:
                candidates += self._by_core.get(query.core, ())
            candidates += self._by_prefix.get(query.core[:MIN_CUT_CHARS], ())
        if query.test:
            candidates += self._by_test.get(query.test, ())
        return {row for row, parts in candidates if same_error(query, parts)}

    def overlapping(self, query: ErrorParts) -> set[int]:
        """Rows holding a signature that may be the same error as ``query`` (``overlapping_errors``)."""
        found = self.same(query)
        if query.comparable:
            rows = self._by_head.get(_head(query.core), ())
            found.update(row for row, parts in rows if overlapping_errors(query, parts))
        return found

    def same_kind(self, query: ErrorParts) -> set[int]:
        """Rows holding a signature of the query's error type (none when it has no type)."""
        return self._by_kind.get(query.kind, set()) if query.kind else set()
