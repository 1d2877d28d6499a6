"""Error signatures as recall compares them: the error inside a runner's wrapping. Pure.

Extraction (``workers.extraction.errors``) keeps an error *as the runner printed it* and prefers the
longer of two overlapping lines, so a real pytest failure is stored as
``tests/test_net.py::test_connect - RuntimeError: could not connect``, Go's as ``--- FAIL: TestAdd``,
jest's as ``● add › adds numbers``, unittest's as ``FAIL: test_add (test_calc.AddTests.test_add)``. An
agent asking about the same failure passes what *it* saw: the bare ``RuntimeError: could not connect``,
the ``E   …`` line, the ``FAILED …`` line, ``--- FAIL: TestAdd (0.00s)``. ``error_parts`` reads either
into the same ``ErrorParts``:

- ``test``: the failing test the runner named (pytest node id, unittest ``method (module.Class)``, Go
  ``TestX``, jest ``describe › it``, a Rust test thread), or None;
- ``kind``: the real error type (``runtimeerror``, ``jsondecodeerror`` for a dotted name, ``ts2345``,
  ``e0308``, ``panic``), or None — a path, a test id or a generic ``error:`` head is never a type;
- ``core``: the error text with the wrapping (runner prefixes, test id, compiler ``file:`` prefix,
  ``[recovered]``, Go's ``(0.00s)``) removed; ``truncated`` when the runner cut it with ``...``.

Two signatures are the *same error* (``same_error``) when nothing they both state disagrees (test, type,
text) and they agree on the test or on the text; they share a *type* when their kinds are equal. Text is
compared canonically (``canonical_error``: whitespace, case, numbers, hex, ``file:line:col`` positions),
so a raw line meets its normalized form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# Positions go before numbers become '#' (as in extraction), so ``x.tsx(42,18)`` is not read as ``x.tsx(#)``.
_POSITION = re.compile(r"(\.[a-z0-9]{1,8})(?::(?:\d+|#)){1,2}(?=[\s:),'\"]|$)|(\.[a-z0-9]{1,8})\(\d+,\d+\)")
_PY_LINE = re.compile(r",? line \d+(?:, column \d+)?")
_HEX = re.compile(r"\b0x[0-9a-f]+\b")
_NUMBER = re.compile(r"(?<![a-z0-9_#.])\d+(?:[.,]\d+)*(?![0-9_]|x#)")

# Wrappers, tried on the canonical (case-folded) text.
_PYTEST_E = re.compile(r"^E\s{2,}(?=\S)")  # pytest's ``E   …`` line (on the raw line, before collapsing)
_SUMMARY_PREFIX = re.compile(r"^(?:failed|error) (?=\S+(?:::|\.py\b))")  # pytest's short summary
_NODE_ID = re.compile(r"^(\S+::\S+)(?: - (.+))?$|^(\S+\.py) - (.+)$")
_UNITTEST = re.compile(r"^(?:fail|error): (\w+) \(([\w.]+)\)")
_GO_FAIL = re.compile(r"^--- fail: (\S+)")
_JEST = re.compile(r"^● (.+)$")
_RUST_PANIC = re.compile(r"^thread '([^']+)'(?: \(#\))? panicked at (?:'(.+)', )?([^\s:]+)(?::#)*:?\s*(.*)$")
_GO_PANIC = re.compile(r"^panic: (.+?)(?: \[recovered\])?$")
_RUST_CODE = re.compile(r"^error\[(e\d{4})\]: (.+)$")
_TS_CODE = re.compile(r"\berror (ts\d+): (.+)$")
_COMPILER = re.compile(r"^\S+?\.\w{1,8}: (?:(?:fatal )?error: )?(.+)$")  # gcc / go: ``x.c: error: msg``
_NOT_FOUND = re.compile(r"^(?:\S*sh:+ (?:#: )?)?(\S+): (?:command )?not found$")  # after ``line #`` went
_DROPPED_HEAD = re.compile(r'^(?:exception in thread "[^"]*" |uncaught |\[error\] )')
_EXCEPTION = re.compile(
    r"^((?:[a-z_][\w$]*\.)*"
    r"(?:[a-z_]\w*?(?:error|exception|exit|interrupt|warning|failure|fault)|stopiteration))"
    r"(?: \[[\w-]+\])?(?:: ?(.*))?$"
)
_TRUNCATION = ("...", "…")
_WORD_CHAR = re.compile(r"\w")
_HEAD = re.compile(r"\W*\w*")  # a text's first word, with what precedes it
MIN_CUT_CHARS = 8  # a cut text keeping fewer message characters than this says too little to match by


def canonical_error(signature: str) -> str:
    """An error signature as compared: whitespace collapsed, case-folded, positions gone, numbers ``#``.

    Meets extraction's normalization (``workers.extraction.errors.normalize_error``) from either side:
    ``timeout after 30 seconds`` and ``timeout after # seconds`` agree; ``x.go:41:9: undefined: y`` and
    ``x.go: undefined: y`` agree. Digits inside identifiers and codes (``py311``, ``E0308``) stay.
    """
    folded = " ".join(signature.split()).casefold()
    if ":" in folded or "(" in folded:
        folded = _POSITION.sub(lambda m: m.group(1) or m.group(2), folded)
    if " line " in folded:
        folded = _PY_LINE.sub("", folded)
    if "0x" in folded:
        folded = _HEX.sub("0x#", folded)
    return _NUMBER.sub("#", folded)


@dataclass(frozen=True)
class ErrorParts:
    """One signature read as test + type + text (see the module docstring); all canonical."""

    core: str  # the error text without its wrapping ("" when the signature only names a failed test)
    kind: str | None = None  # the error type: "runtimeerror", "ts2345", "e0308", "panic"
    test: str | None = None  # the failing test the runner named
    truncated: bool = False  # the runner cut ``core`` (``...``): it is a prefix of the real text

    @property
    def message(self) -> str:
        """``core`` without its ``Type:`` head (the whole core when there is no type)."""
        if self.kind and ": " in self.core:
            return self.core.split(": ", 1)[1]
        return self.core

    @property
    def comparable(self) -> bool:
        """Whether ``core`` can be compared: present, and if cut, keeping ``MIN_CUT_CHARS`` of message."""
        return bool(self.core) and (not self.truncated or len(self.message) >= MIN_CUT_CHARS)


def _exception(text: str, *, test: str | None = None, truncated: bool = False) -> ErrorParts:
    """``text`` read as ``Type: message`` when it starts with an exception name, else as plain text."""
    match = _EXCEPTION.match(text)
    if match and not (truncated and match.group(2) is None):  # "AssertionErro..." is no type
        kind = match.group(1).rsplit(".", 1)[-1]  # ``json.decoder.JSONDecodeError`` → ``jsondecodeerror``
        core = text[len(match.group(1)) - len(kind) :]  # the module path says nothing more
        return ErrorParts(core, kind=kind, test=test, truncated=truncated)
    return ErrorParts(text, test=test, truncated=truncated)


def _untruncated(text: str) -> tuple[str, bool]:
    for mark in _TRUNCATION:
        if text.endswith(mark):
            return text[: -len(mark)].rstrip(), True
    return text, False


@lru_cache(maxsize=65_536)
def error_parts(signature: str) -> ErrorParts:
    """``signature`` (raw, as a runner printed it, or as extraction stored it) as ``ErrorParts``."""
    raw = _ANSI.sub("", signature) if "\x1b" in signature else signature
    text = canonical_error(_PYTEST_E.sub("", raw.strip(), count=1))
    text = _SUMMARY_PREFIX.sub("", _DROPPED_HEAD.sub("", text, count=1), count=1)
    match: re.Match[str] | None
    if ("::" in text or ".py - " in text) and (match := _NODE_ID.match(text)):
        test = match.group(1) or match.group(3)
        rest, truncated = _untruncated(match.group(2) or match.group(4) or "")
        return _exception(rest, test=test, truncated=truncated)
    if match := _UNITTEST.match(text):
        module = match.group(2).removesuffix("." + match.group(1))
        return ErrorParts("", test=f"{match.group(1)} ({module})")
    if match := _GO_FAIL.match(text):
        return ErrorParts("", test=match.group(1))
    if match := _JEST.match(text):
        return ErrorParts("", test=match.group(1).strip())
    if text.startswith("thread '") and (match := _RUST_PANIC.match(text)):
        thread = match.group(1)
        message = (match.group(2) or match.group(4)).strip()
        return ErrorParts(message, kind="panic", test=None if thread == "main" else thread)
    if text.endswith("not found") and (match := _NOT_FOUND.match(text)):
        return ErrorParts(f"{match.group(1)}: command not found")
    if match := _GO_PANIC.match(text):
        return ErrorParts(match.group(1), kind="panic")
    if match := _RUST_CODE.match(text):
        return ErrorParts(match.group(2), kind=match.group(1))
    if " ts" in text and (match := _TS_CODE.search(text)):
        return ErrorParts(match.group(2), kind=match.group(1))
    parts = _exception(text)
    if parts.kind is None and (match := _COMPILER.match(text)):
        return ErrorParts(match.group(1))
    return parts


def query_error_parts(signature: str, workspace: str | None = None) -> ErrorParts:
    """``error_parts`` of an error an agent passed, with its workspace's absolute prefix taken off."""
    if workspace and workspace.strip("/"):
        signature = signature.replace(workspace.rstrip("/") + "/", "")
    return error_parts(signature)


_RUNNER_PREFIX = re.compile(r"^\s*(?:E\s{2,}|(?:FAILED|ERROR) (?=\S+(?:::|\.py\b)))")


def error_words(signature: str) -> str:
    """The text of ``signature`` that says what went wrong, for matching by words: the runner's prefix
    (``FAILED``, ``E   ``) and the error type's name go, the test id and the message stay.

    The type is evidence once, through the error signal's type share; left in the words, a rare type
    name (``ValidationError``) would count again as a distinctive keyword of every entry of that type.
    """
    text = _RUNNER_PREFIX.sub("", signature, count=1)
    kind = error_parts(signature).kind
    if kind:
        name = re.compile(rf"(?<![\w.])(?:[\w$]+\.)*{re.escape(kind)}\b", re.IGNORECASE)
        text = name.sub(" ", text, count=1)
    return text


def error_type(signature: str) -> str | None:
    """The real error type of ``signature`` (``runtimeerror``, ``e0308``, ``ts2345``, ``panic``) or None."""
    return error_parts(signature).kind


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
