"""Error signatures, in one place: the runner formats, canonical forms, and what a signature says. Pure.

Both sides of the store read error lines, and they read them here:

- extraction (``workers.extraction.errors``) finds error lines in tool outputs with the runner formats
  below, *as printed*, and stores each as ``normalize_error`` makes it;
- recall (``store.recall.signatures``) reads a stored signature, or one an agent passes, with
  ``error_parts``: the same formats on the *canonical* text (``canonical_error``: case-folded, numbers
  ``#``, positions gone), so a raw line meets its normalized form.

One table holds the runner formats. A format both sides read is written once, as printed; its canonical
pattern is compiled from the same source (``_canonical``: its letters case-folded, ``<N>`` a number as
canonicalisation leaves it). A format whose text canonicalisation reshapes (a
``file:line:`` position, bash's ``line N:``) has its canonical pattern written next to the printed one.

``error_parts`` reads a signature into ``ErrorParts``:

- ``test``: the failing test the runner named (pytest node id, unittest ``method (module.Class)``, Go
  ``TestX``, jest ``describe › it``, a Rust test thread), or None;
- ``kind``: the real error type (``runtimeerror``, ``jsondecodeerror`` for a dotted name, ``ts2345``,
  ``e0308``, ``panic``), or None — a path, a test id or a generic ``error:`` head is never a type;
- ``core``: the error text with the wrapping (runner prefixes, test id, compiler ``file:`` prefix,
  ``[recovered]``, Go's ``(0.00s)``) removed; ``truncated`` when the runner cut it with ``...``.

``error_type`` is the type as printed, for an entry's tags (``ValueError``, ``E0308``, ``TS2345``,
``panic``): it finds a type name anywhere in the signature (pytest's ``decoder.py:355: JSONDecodeError``
line has one), where ``ErrorParts.kind`` reads only the type that heads the error
(docs/decisions/0018-store-layout-and-error-signatures.md, "One home for error signatures").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# --- the runner formats -----------------------------------------------------------------------------
_N = "<N>"  # a number in a format's source: digits as printed; see ``_canonical`` for the canonical text


def _printed(source: str) -> re.Pattern[str]:
    """A format's pattern on the text as the runner printed it."""
    return re.compile(source.replace(_N, r"\d+"))


_LITERAL = re.compile(r"\\.|[A-Z]")  # an escape (kept: ``\S`` is not ``\s``) or an upper-case letter


def _canonical(source: str, number: str = "#") -> re.Pattern[str]:
    """A format's pattern on canonical text: its letters folded as the text's are (not ``IGNORECASE``,
    which would also let ``i`` match a dotless ``ı``), ``<N>`` as ``number``."""
    source = source.replace(_N, number)
    return re.compile(_LITERAL.sub(lambda m: m.group() if len(m.group()) > 1 else m.group().lower(), source))


TYPE_SUFFIXES = "Error|Exception|Exit|Interrupt|Warning|Failure|Fault"  # what an error type's name ends in
EXC_NAME = rf"(?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:{TYPE_SUFFIXES})"  # as printed: ``json.JSONDecodeError``

PYTEST_E = r"E\s{2,}"  # pytest's ``E   …`` line
PYTEST_E_BLOCK = re.compile(r"^E {2,}(\S.*)$")  # a line of an ``E`` block as pytest prints it (spaces)
_PYTEST_SUMMARY = r"(?:FAILED|ERROR) (?=\S+(?:::|\.py\b))"  # the short summary's head
_PYTEST_NODE = r"(\S+::\S+)(?: - (.+))?|(\S+\.py) - (.+)"  # a node id or file, then `` - message``
PYTEST_SHORT = _printed(rf"^(?:FAILED|ERROR) ({_PYTEST_NODE})$")
RUNNER_PREFIX = _printed(rf"^\s*(?:{PYTEST_E}|{_PYTEST_SUMMARY})")
_UNITTEST = r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)"
UNITTEST = _printed(_UNITTEST)
_GO_FAIL = r"^\s*--- FAIL: (\S+)"
GO_FAIL = _printed(_GO_FAIL)
_GO_PANIC = r"^panic: (.+?)(?: \[recovered\])?$"
GO_PANIC = _printed(_GO_PANIC)
GO_COMPILE = _printed(rf"^(\S+\.go):{_N}(?::{_N})?: (.+)$")
_TS_CODE = r"\berror (TS\d+): (.+)$"
TS_CODE = _printed(_TS_CODE)
_RUST_ERROR = r"^error(?:\[(E\d{4})\])?: (.+)$"  # ``error[E0308]: …`` (the code) or ``error: …``
RUST_ERROR = _printed(_RUST_ERROR)
_RUST_PANIC = rf"^thread '([^']+)'(?: \({_N}\))? panicked at (?:'(.+)', )?([^\s:]+)((?::{_N})*):?\s*(.*)$"
RUST_PANIC = _printed(_RUST_PANIC)  # thread, quoted message, file, position, message
C_ERROR = _printed(rf"^(\S+?\.\w+):{_N}(?::{_N})?: (?:fatal )?error: (.+)$")
JEST_TITLE = re.compile(r"^\s*● (?!Console\b)(.+›.+|[^:]+)$")  # a failed test's title (not a console.log)
CMD_NOT_FOUND = _printed(rf"^(?:\S*sh: (?:line {_N}: |{_N}: )?)?(\S+): (?:command not found|not found)$")

# The same formats on canonical text.
_C_PYTEST_E = re.compile(rf"^{PYTEST_E}(?=\S)")  # on the raw line, before case-folding
_C_SUMMARY = _canonical(rf"^{_PYTEST_SUMMARY}")
_C_NODE = _canonical(rf"^(?:{_PYTEST_NODE})$")
_C_UNITTEST = _canonical(_UNITTEST)
_C_GO_FAIL = _canonical(_GO_FAIL)
_C_JEST = re.compile(r"^● (.+)$")  # any bullet: the title as the agent passes it
_C_RUST_PANIC = _canonical(_RUST_PANIC)
_C_GO_PANIC = _canonical(_GO_PANIC)
_C_RUST_ERROR = _canonical(_RUST_ERROR)
_C_TS_CODE = _canonical(_TS_CODE)
# Canonicalisation took the ``:line:col`` off a compiler's ``file:`` and ``line N`` off bash's ``line N:``.
_C_COMPILER = re.compile(r"^\S+?\.\w{1,8}: (?:(?:fatal )?error: )?(.+)$")  # gcc / go: ``x.c: error: msg``
_C_NOT_FOUND = re.compile(r"^(?:\S*sh:+ (?:#: )?)?(\S+): (?:command )?not found$")
_C_DROPPED_HEAD = re.compile(r'^(?:exception in thread "[^"]*" |uncaught |\[error\] )')
_C_EXCEPTION = _canonical(
    rf"^((?:[a-z_][\w$]*\.)*(?:[a-z_]\w*?(?:{TYPE_SUFFIXES})|StopIteration))(?: \[[\w-]+\])?(?:: ?(.*))?$"
)

# --- canonical forms --------------------------------------------------------------------------------
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_POSITION = rf"(\.[A-Za-z0-9]{{1,8}})(?::{_N}){{1,2}}(?=[\s:),'\"]|$)|(\.[A-Za-z0-9]{{1,8}})\(\d+,\d+\)"
_PRINTED_POSITION = _printed(_POSITION)
# On canonical text a position's numbers may already be ``#`` (a stored signature asked again).
_CANONICAL_POSITION = _canonical(_POSITION, number=r"(?:\d+|#)")
_PY_LINE = re.compile(r",? line \d+(?:, column \d+)?")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_#.])\d+(?:[.,]\d+)*(?![0-9_]|x#)")
_ABS_PATH = re.compile(r"""(?<![\w.:/-])(/(?:[\w.@+~-]+/)*[\w.@+~-]+)""")
_WIN_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\\\s:\"']+\\)*[^\\\s:\"']+")
_SPACE = re.compile(r"\s+")


def _relative_path(match: re.Match[str], workspace: str) -> str:
    path = match.group(1)
    root = workspace.rstrip("/")
    if root and path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return "<path>"


def normalize_error(line: str, *, workspace: str | None = None, limit: int = 200) -> str:
    """One error line as extraction stores it (versioned by ``EXTRACTOR_VERSION``).

    1. ANSI colour codes go; whitespace collapses; the result is cut to ``limit`` characters.
    2. Paths become their workspace-relative form (``/home/u/app/src/x.py`` → ``src/x.py``) or ``<path>``
       when outside the workspace; ``file:line:col``, ``, line N`` and ``(line,col)`` positions go.
    3. Hex addresses become ``0x#``; other numbers become ``#`` unless part of an identifier or a code
       (``py311``, ``sha256``, ``E0308``, ``TS2345`` stay).

    So ``ValueError: timeout after 30 seconds`` → ``ValueError: timeout after # seconds``.
    """
    text = ANSI.sub("", line) if "\x1b" in line else line
    text = _SPACE.sub(" ", text).strip()
    if ":" in text or "(" in text:
        text = _PRINTED_POSITION.sub(lambda m: m.group(1) or m.group(2), text)
    if "/" in text:
        text = _ABS_PATH.sub(lambda m: _relative_path(m, workspace or ""), text)
    if ":\\" in text:
        text = _WIN_PATH.sub("<path>", text)
    if " line " in text:
        text = _PY_LINE.sub("", text)
    if "0x" in text:
        text = _HEX.sub("0x#", text)
    text = _NUMBER.sub("#", text)
    text = _SPACE.sub(" ", text).strip()
    return text[:limit].rstrip()


def canonical_error(signature: str) -> str:
    """An error signature as compared: whitespace collapsed, case-folded, positions gone, numbers ``#``.

    Meets ``normalize_error`` from either side: ``timeout after 30 seconds`` and ``timeout after #
    seconds`` agree; ``x.go:41:9: undefined: y`` and ``x.go: undefined: y`` agree. Digits inside
    identifiers and codes (``py311``, ``E0308``) stay. Positions go before numbers become ``#``, so
    ``x.tsx(42,18)`` is not read as ``x.tsx(#)``.
    """
    folded = " ".join(signature.split()).casefold()
    if ":" in folded or "(" in folded:
        folded = _CANONICAL_POSITION.sub(lambda m: m.group(1) or m.group(2), folded)
    if " line " in folded:
        folded = _PY_LINE.sub("", folded)
    if "0x" in folded:
        folded = _HEX.sub("0x#", folded)
    return _NUMBER.sub("#", folded)


# --- what a signature says --------------------------------------------------------------------------
_TRUNCATION = ("...", "…")
MIN_CUT_CHARS = 8  # a cut text keeping fewer message characters than this says too little to match by


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
    match = _C_EXCEPTION.match(text)
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
    raw = ANSI.sub("", signature) if "\x1b" in signature else signature
    text = canonical_error(_C_PYTEST_E.sub("", raw.strip(), count=1))
    text = _C_SUMMARY.sub("", _C_DROPPED_HEAD.sub("", text, count=1), count=1)
    match: re.Match[str] | None
    if ("::" in text or ".py - " in text) and (match := _C_NODE.match(text)):
        test = match.group(1) or match.group(3)
        rest, truncated = _untruncated(match.group(2) or match.group(4) or "")
        return _exception(rest, test=test, truncated=truncated)
    if match := _C_UNITTEST.match(text):
        module = match.group(2).removesuffix("." + match.group(1))
        return ErrorParts("", test=f"{match.group(1)} ({module})")
    if match := _C_GO_FAIL.match(text):
        return ErrorParts("", test=match.group(1))
    if match := _C_JEST.match(text):
        return ErrorParts("", test=match.group(1).strip())
    if text.startswith("thread '") and (match := _C_RUST_PANIC.match(text)):
        thread = match.group(1)
        message = (match.group(2) or match.group(5)).strip()
        return ErrorParts(message, kind="panic", test=None if thread == "main" else thread)
    if text.endswith("not found") and (match := _C_NOT_FOUND.match(text)):
        return ErrorParts(f"{match.group(1)}: command not found")
    if match := _C_GO_PANIC.match(text):
        return ErrorParts(match.group(1), kind="panic")
    if (match := _C_RUST_ERROR.match(text)) and match.group(1):
        return ErrorParts(match.group(2), kind=match.group(1))
    if " ts" in text and (match := _C_TS_CODE.search(text)):
        return ErrorParts(match.group(2), kind=match.group(1))
    parts = _exception(text)
    if parts.kind is None and (match := _C_COMPILER.match(text)):
        return ErrorParts(match.group(1))
    return parts


_CODE = re.compile(r"\b(E\d{4}|TS\d+)\b")
_TYPE_NAME = re.compile(rf"(?:^|[\s-])({EXC_NAME})\b")


def error_type(signature: str) -> str | None:
    """The error's type name or code as printed (``ValueError``, ``E0308``, ``TS2345``, ``panic``), when
    it has one: an entry's tag."""
    if match := _CODE.search(signature):
        return match.group(1)
    if match := _TYPE_NAME.search(signature):
        return match.group(1).rsplit(".", 1)[-1]
    if signature.startswith("panic:") or "panicked at" in signature:
        return "panic"
    return None
