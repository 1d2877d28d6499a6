"""Symbols: the definitions whose bodies a change touched, read from diff hunks and edit texts.

Pure, regex-based per language (see docs/decisions/0008-extraction.md: on the agent-log corpus regexes
find every changed definition that a hunk makes visible; tree-sitter cannot parse the fragments a hunk
holds any better). From a hunk: the definition git printed after ``@@`` and every definition line met in
the hunk before a changed line (the innermost open one wins). From a structured edit (old/new text): the
definitions in the changed lines, else the nearest definition above the edit in the tool's own snippet.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from workers.extraction.diffs import Hunk

_PY = [
    re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*[\[(]"),
    re.compile(r"^(\s*)class\s+([A-Za-z_]\w*)\s*[(:\[]"),
]
_JS_KEYWORDS = {
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "function",
    "return",
    "with",
    "else",
    "do",
    "new",
    "typeof",
}
_JS = [
    re.compile(r"^(\s*)(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*[<(]"),
    re.compile(r"^(\s*)(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)"),
    re.compile(r"^(\s*)(?:export\s+)?(?:interface|type|enum)\s+([A-Za-z_$][\w$]*)"),
    re.compile(
        r"^(\s*)(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?"
        r"(?:function\b|(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=>|React\.(?:memo|forwardRef)|styled)"
    ),
    re.compile(
        r"^(\s+)(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*\*?"
        r"([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\([^)]*\)?\s*(?::\s*[^{=]+)?\{\s*$"
    ),
]
_GO = [
    re.compile(r"^()func\s+\(\s*\w*\s*\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\)\s*([A-Za-z_]\w*)\s*[\[(]"),
    re.compile(r"^()func\s+([A-Za-z_]\w*)\s*[\[(]"),
    re.compile(r"^()type\s+([A-Za-z_]\w*)\s+(?:struct|interface)\b"),
]
_RUST = [
    re.compile(
        r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|default)\s+|extern\s+\"[^\"]*\"\s+)*"
        r"fn\s+([A-Za-z_]\w*)"
    ),
    re.compile(
        r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?impl(?:<[^{]*?>)?\s+"
        r"(?:[\w:<>, ]+?\s+for\s+)?([A-Za-z_]\w*)"
    ),
    re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|mod)\s+([A-Za-z_]\w*)"),
]
_JVM_KEYWORDS = _JS_KEYWORDS | {
    "synchronized",
    "super",
    "this",
    "throw",
    "using",
    "lock",
    "foreach",
    "sizeof",
}
_JVM = [
    re.compile(
        r"^(\s*)(?:(?:public|private|protected|internal|static|final|abstract|sealed|open|data|partial|"
        r"override|inline)\s+)*(?:class|interface|enum|record|object|struct)\s+([A-Za-z_]\w*)"
    ),
    re.compile(
        r"^(\s*)(?:(?:public|private|protected|internal|override|suspend|inline|open)\s+)*fun\s+"
        r"(?:<[^>]*>\s*)?(?:[\w.]+\.)?([A-Za-z_]\w*)\s*\("
    ),
    re.compile(
        r"^(\s*)(?:(?:public|private|protected|internal|static|final|abstract|synchronized|override|virtual|"
        r"async|native|default)\s+)+[\w<>\[\],.? ]+?\s+([A-Za-z_]\w*)\s*\([^;]*$"
    ),
]
_C_KEYWORDS = _JVM_KEYWORDS | {"sizeof", "defined", "case", "goto", "DEF", "DECL"}
_C = [
    re.compile(r"^()(?:struct|class|union|enum|namespace)\s+([A-Za-z_]\w*)\s*(?:[:{]|$)"),
    re.compile(
        r"^()(?!return\b|else\b|if\b)(?:[A-Za-z_][\w:<>,*&\s]*?[\s*&])\**((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)"
        r"\s*\([^;]*$"
    ),
]
_GENERIC = [
    re.compile(
        r"^(\s*)(?:(?:public|private|protected|static|export|async|pub)\s+)*"
        r"(?:def|fun|func|fn|function|sub|class|module|actor|primitive|trait|struct|interface)\s+"
        r"([A-Za-z_][\w?!]*)"
    ),
]
_NUMBERED = re.compile(
    r"^\s*\d+(?:\t|→|: ?|\s{2})"
)  # line numbers: `cat -n`, Claude Code `12→`, SWE-agent `12:`
_BY_EXTENSION: dict[str, list[re.Pattern[str]]] = {
    **dict.fromkeys(("py", "pyi", "pyx"), _PY),
    **dict.fromkeys(("js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "vue", "svelte"), _JS),
    "go": _GO,
    "rs": _RUST,
    **dict.fromkeys(("java", "kt", "kts", "cs", "scala", "groovy"), _JVM),
    **dict.fromkeys(("c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm"), _C),
}


@lru_cache(maxsize=4096)
def _patterns(path: str) -> list[re.Pattern[str]]:
    """The definition patterns of ``path``'s language (memoized: asked once per line of an edit)."""
    extension = posixpath.splitext(path)[1].lstrip(".").lower()
    return _BY_EXTENSION.get(extension, _GENERIC)


def definition(line: str, path: str) -> tuple[int, str] | None:
    """``(indent, name)`` when ``line`` opens a definition in ``path``'s language."""
    patterns = _patterns(path)
    keywords = _C_KEYWORDS if patterns is _C else _JVM_KEYWORDS if patterns is _JVM else _JS_KEYWORDS
    for pattern in patterns:
        match = pattern.match(line)
        if not match:
            continue
        if patterns is _GO and match.lastindex == 3:
            return 0, f"{match.group(2)}.{match.group(3)}"
        name = match.group(2)
        if name in keywords:
            continue
        return len(match.group(1).expandtabs(4)), name
    return None


def _qualified(stack: list[tuple[int, str]], indent: int, name: str) -> list[tuple[int, str]]:
    """The open-definition stack after a definition at ``indent`` opens."""
    kept = [
        (i, n) for i, n in stack if i < indent and (i >= 0 or indent > 0)
    ]  # a top-level def ends the header's
    return [*kept, (indent, name)]


def _name(stack: list[tuple[int, str]]) -> str:
    return ".".join(name for _, name in stack[-2:])


def changed_lines(path: str, hunks: Iterable[Hunk]) -> Iterator[tuple[str, str, str]]:
    """Every changed line of the hunks as ``(definition, tag, text)``: the innermost open definition
    (``Class.method``; "" when none is visible), ``+`` or ``-``, and the line without its tag."""
    # A line at or left of a definition's indent ends it; in Python a closing bracket or a comment does not.
    no_close = ("#", ")", "]", "}") if _patterns(path) is _PY else ("//", "/*", "*", "#", "{")
    for hunk in hunks:
        stack: list[tuple[int, str]] = []
        header = definition(hunk.context, path) if hunk.context else None
        if header:
            stack = [(-1, header[1])]
        for line in hunk.lines:
            tag, body = line[:1], line[1:]
            opened = definition(body, path) if tag in {" ", "+", "-"} else None
            if opened:
                stack = _qualified(stack, *opened)
            elif body.strip() and not body.lstrip().startswith(no_close):
                depth = len(body) - len(body.lstrip())
                stack = [(i, n) for i, n in stack if i < depth]
            if tag in {"+", "-"} and body.strip():
                yield (_name(stack) if stack else ""), tag, body


def symbols_from_hunks(path: str, hunks: Iterable[Hunk]) -> list[str]:
    """Definitions whose bodies the hunks change, innermost first-seen order (``Class.method``)."""
    return list(dict.fromkeys(name for name, _, _ in changed_lines(path, hunks) if name))


def symbols_from_edit(path: str, old: str, new: str, snippet: str = "") -> list[str]:
    """Definitions an old→new text replacement changes; the snippet locates the enclosing one."""
    old_lines = set(old.splitlines())
    new_lines = set(new.splitlines())
    changed = [line for line in new.splitlines() if line not in old_lines]
    changed += [line for line in old.splitlines() if line not in new_lines]
    found: list[str] = []
    for line in changed:
        opened = definition(line, path)
        if opened and opened[1] not in found:
            found.append(opened[1])
    if found:
        return found
    enclosing: str | None = None
    for line in new.splitlines():
        if line not in old_lines:
            break
        opened = definition(line, path)
        enclosing = opened[1] if opened else enclosing
    if enclosing and any(line not in old_lines for line in new.splitlines()):
        return [enclosing]
    if not snippet:
        return found
    # Line numbers are stripped only where looked at: a stripped line is a suffix of the raw one, so
    # ``anchor in raw`` finds every candidate and the stripped test confirms it (same result, less work).
    raw_lines = snippet.splitlines()
    position = None
    for text in (old, new):  # the snippet may show the file before the edit (old) or after it (new)
        anchor = next((line.strip() for line in text.splitlines() if line.strip()), "")
        if anchor:
            position = next(
                (i for i, s in enumerate(raw_lines) if anchor in s and anchor in _NUMBERED.sub("", s)), None
            )
        if position is not None:
            break
    if position is None:
        return found
    for line in reversed(raw_lines[:position]):
        opened = definition(_NUMBERED.sub("", line), path)
        if opened:
            return [opened[1]]
    return found
