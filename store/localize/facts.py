"""What one source file defines and which literal strings it holds. Pure, regex-based, per language.

A file's *defs* are the names a task text could call it by: functions, methods (bare and as
``Class.method``, ``Recv.Method``, ``Type.method``), classes, structs, types, traits, interfaces,
enums, constants, and the command-line flags it declares (``--cache-map``). Its *strings* are the
literal strings worth matching against an error message a task quotes: each literal is cut at its
format placeholders (``{}``, ``%s``, ``${x}``) and every piece of at least ``MIN_STRING_CHARS``
characters and two words is kept normalized (lower case, runs of anything but letters, digits and ``_``
as one space), at most ``MAX_STRINGS`` per file.

Regexes, not parsers: they read a 10k-file checkout in seconds, never fail on a syntax error, and miss
some exotic forms (a name defined by a macro, a method assigned at run time), which only costs recall
of that name. The language is the file's extension; other files hold no facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from posixpath import splitext

MIN_STRING_CHARS = 12
MAX_STRING_CHARS = 160
MAX_STRINGS = 300
MAX_DEFS = 2000


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """What one source file defines (names) and holds (normalized literal strings)."""

    defs: tuple[str, ...] = ()
    strings: tuple[str, ...] = ()


EMPTY = SourceFacts()

_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)")
_PY_CONST = re.compile(r"^([A-Z][A-Z0-9_]{2,})[ \t]*(?::[^=\n]*)?=", re.M)

_TS_CLASS = re.compile(
    r"^([ \t]*)(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:abstract[ \t]+)?"
    r"(class|interface|enum|namespace)[ \t]+([A-Za-z_$][\w$]*)"
)
_TS_FUNC = re.compile(
    r"^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:async[ \t]+)?function\*?[ \t]*"
    r"([A-Za-z_$][\w$]*)",
)
_TS_TYPE = re.compile(r"^[ \t]*(?:export[ \t]+)?(?:declare[ \t]+)?type[ \t]+([A-Za-z_$][\w$]*)")
_TS_CONST = re.compile(r"^(?:export[ \t]+)?(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)")
_TS_METHOD = re.compile(
    r"^([ \t]+)(?:(?:public|private|protected|static|async|readonly|override|abstract|get|set)[ \t]+)*"
    r"#?([A-Za-z_$][\w$]*)[ \t]*(?:<[^>\n]*>)?\([^;]*$"
)
_TS_NOT_METHOD = frozenset({"if", "for", "while", "switch", "catch", "return", "function", "new", "super"})

_GO_FUNC = re.compile(
    r"^func[ \t]*(?:\([ \t]*\w*[ \t]*\*?[ \t]*([A-Za-z_]\w*)(?:\[[^\]]*\])?[ \t]*\)[ \t]*)?([A-Za-z_]\w*)",
    re.M,
)
_GO_TYPE = re.compile(r"^type[ \t]+([A-Za-z_]\w*)", re.M)
_GO_CONST = re.compile(r"^(?:const|var)[ \t]+([A-Za-z_]\w*)", re.M)
_GO_BLOCK = re.compile(r"^(type|const|var)[ \t]*\(\n(.*?)^\)", re.M | re.S)
_GO_BLOCK_NAME = re.compile(r"^\t([A-Za-z_]\w*)\b", re.M)

_RS_ITEM = re.compile(
    r"^([ \t]*)(?:pub(?:\([^)]*\))?[ \t]+)?(?:(?:const|async|unsafe|extern(?:[ \t]+\"[^\"]*\")?)[ \t]+)*"
    r"(fn|struct|enum|trait|type|mod|union|const|static|macro_rules!)[ \t]*([A-Za-z_]\w*)"
)
_RS_IMPL = re.compile(
    r"^([ \t]*)impl\b(?:[ \t]*<[^{]*?>)?[ \t]+(?:[\w:]+(?:<[^{]*?>)?[ \t]+for[ \t]+)?&?([\w:]+)"
)

_FLAG_LITERAL = re.compile(r"[\"'`](--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)[\"'`=]")
_CLAP_LONG = re.compile(
    r"#\[(?:arg|clap)\([^\]]*?\blong\b(?:\s*=\s*\"([a-z0-9-]+)\")?[^\]]*\]\s*(?:#\[[^\]]*\]\s*|///[^\n]*\n\s*)*"
    r"(?:pub(?:\([^)]*\))?\s+)?([a-z_][a-z0-9_]*)\s*:"
)
_STRING = re.compile(r'"((?:[^"\\\n]|\\.){12,})"|\'((?:[^\'\\\n]|\\.){12,})\'|`([^`]{12,400})`')
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\{[^{}]{0,40}\}|%[-+ #0-9.]*[a-zA-Z]|\\[ntr]")
_WORD = re.compile(r"[a-z0-9_]+")


def normalize(text: str) -> str:
    """``text`` lower-cased, every run of characters other than letters, digits and ``_`` one space."""
    return " ".join(_WORD.findall(text.lower()))


def facts(path: str, text: str) -> SourceFacts:
    """The names ``text`` (the content of ``path``) defines and its literal strings; empty if unknown."""
    ext = splitext(path)[1].lower()
    finder = _FINDERS.get(ext)
    if finder is None:
        return EMPTY
    defs = tuple(dict.fromkeys([*finder(text), *_flags(text, ext)]))[:MAX_DEFS]
    return SourceFacts(defs=defs, strings=_strings(text))


def _flags(text: str, ext: str) -> Iterator[str]:
    """The command-line flags the file declares, as ``--name``: a literal ``"--name"``, or (Rust, clap)
    a field under ``#[arg(...long...)]``."""
    yield from _FLAG_LITERAL.findall(text)
    if ext == ".rs":
        for explicit, field in _CLAP_LONG.findall(text):
            yield "--" + (explicit or field.replace("_", "-"))


def _strings(text: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for match in _STRING.finditer(text):
        literal = match.group(1) or match.group(2) or match.group(3) or ""
        if "://" in literal:  # a URL says where, not what went wrong
            continue
        for piece in _PLACEHOLDER.split(literal):
            norm = normalize(piece)[:MAX_STRING_CHARS]
            if len(norm) >= MIN_STRING_CHARS and " " in norm:
                seen[norm] = None
                if len(seen) >= MAX_STRINGS:
                    return tuple(seen)
    return tuple(seen)


def _indent(prefix: str) -> int:
    return len(prefix.expandtabs(4))


def _python(text: str) -> Iterator[str]:
    classes: list[tuple[int, str]] = []
    for line in text.splitlines():
        match = _PY_DEF.match(line)
        if match is None:
            continue
        depth = _indent(match.group(1))
        while classes and classes[-1][0] >= depth:
            classes.pop()
        name = match.group(3)
        yield name
        if classes:
            yield f"{classes[-1][1]}.{name}"
        if match.group(2) == "class":
            classes.append((depth, name))
    yield from _PY_CONST.findall(text)


def _typescript(text: str) -> Iterator[str]:
    classes: list[tuple[int, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("//", "*", "/*")):
            continue
        depth = _indent(line[: len(line) - len(line.lstrip())])
        while classes and (classes[-1][0] > depth or (classes[-1][0] == depth and stripped[0] in "})")):
            classes.pop()
        if match := _TS_CLASS.match(line):
            yield match.group(3)
            classes.append((_indent(match.group(1)), match.group(3)))
        elif match := _TS_FUNC.match(line) or _TS_TYPE.match(line) or _TS_CONST.match(line):
            yield match.group(1)
        elif classes and (match := _TS_METHOD.match(line)) and match.group(2) not in _TS_NOT_METHOD:
            yield match.group(2)
            yield f"{classes[-1][1]}.{match.group(2)}"


def _go(text: str) -> Iterator[str]:
    for recv, name in _GO_FUNC.findall(text):
        yield name
        if recv:
            yield f"{recv}.{name}"
    yield from _GO_TYPE.findall(text)
    yield from _GO_CONST.findall(text)
    for block in _GO_BLOCK.finditer(text):
        yield from _GO_BLOCK_NAME.findall(block.group(2))


def _rust(text: str) -> Iterator[str]:
    impls: list[tuple[int, str]] = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if not stripped or stripped.startswith("//"):
            continue
        depth = _indent(line[: len(line) - len(stripped)])
        while impls and (impls[-1][0] > depth or (impls[-1][0] == depth and stripped.startswith("}"))):
            impls.pop()
        opens = not stripped.rstrip().endswith("}")
        if match := _RS_IMPL.match(line):
            if opens:
                impls.append((_indent(match.group(1)), match.group(2).rsplit("::", 1)[-1]))
        elif (match := _RS_ITEM.match(line)) and not (
            match.group(2) == "mod" and stripped.rstrip().endswith(";")
        ):
            name = match.group(3)  # (``mod x;`` declares a module whose file is x.rs: no definition here)
            yield name
            if impls and match.group(2) in ("fn", "const", "type"):
                yield f"{impls[-1][1]}.{name}"
            if match.group(2) == "trait" and opens:
                impls.append((depth, name))


_TS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_FINDERS = {
    ".py": _python,
    ".pyi": _python,
    ".go": _go,
    ".rs": _rust,
    **dict.fromkeys(_TS_EXTENSIONS, _typescript),
}
