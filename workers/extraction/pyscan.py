"""The fast reader behind ``pyscript``: the file effects of plain scripts, read with regexes in text order.

Pure. Agents' edit scripts are plain: ``file_path = 'x.py'``, ``with open(file_path, 'r') as f``,
``open(file_path, 'w')``, ``Path('x').write_text(...)``, ``shutil.copy(a, b)``. Parsing them with ``ast``
costs ~0.3 ms each (a turn runs dozens); this reader walks the calls and the one-line assignments in
source order at a few microseconds and answers the same. When the code holds something it does not
follow (a ``for`` over a list of paths, tuple unpacking of ``sys.argv``, ``os.path.join`` or ``/`` in a
path argument, a call spread over several lines with a path it cannot read), it answers ``None`` and
``pyscript`` parses the code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# One regex per call kind, each starting with a literal (fast to search for); matches merge by position.
# A match whose preceding character continues a name (``myopen(``, ``x.open(``) is not the call.
_OPEN = re.compile(
    r"""open\(\s*(?P<oarg>[^,()\n]+?)\s*(?:,\s*(?:mode\s*=\s*)?(?P<q>['"])(?P<mode>[^'"]*)(?P=q)\s*)?[,)]"""
)
_METHOD = re.compile(r"\.\s*(?P<op>write_text|write_bytes|read_text|read_bytes|unlink)\(")
_RECEIVER = re.compile(r"(?:Path\(\s*[^()\n]*?\s*\)|[A-Za-z_][\w.]*)\s*$")
_TWO = re.compile(
    r"""(?P<fn>shutil\.(?:copy2?|copyfile|move)|os\.(?:replace|rename))\(\s*(?P<a>[^,()\n]+?)\s*,"""
    r"""\s*(?P<b>[^,()\n]+?)\s*[,)]"""
)
_REMOVE = re.compile(r"os\.(?:remove|unlink)\(\s*(?P<r>[^,()\n]+?)\s*\)")
_FILEINPUT = re.compile(r"fileinput\.input\(\s*(?P<f>[^,()\n]+?)\s*,[^)\n]*\binplace\s*=\s*True")
# The loose form of each: every call of that kind, read or not. More loose than strict: the AST decides.
_LOOSE = (
    ("open", "open(", re.compile(r"open\(")),
    ("two", "", re.compile(r"shutil\.(?:copy2?|copyfile|move)\(|os\.(?:replace|rename)\(")),
    ("rm", "os.", re.compile(r"os\.(?:remove|unlink)\(")),
    ("fi", "fileinput", re.compile(r"fileinput\.input\(")),
)
_STRICT = {"open": _OPEN, "two": _TWO, "rm": _REMOVE, "fi": _FILEINPUT}
_PREFIXES = ("io.", "codecs.")
_ASSIGN = re.compile(
    r"(?:^|;)[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n;]*)?=(?!=)[ \t]*([^;\n]*?)[ \t]*(?=;|#|$)", re.M
)
_JOINED = re.compile(r"""(?:Path\(|join\().*['"]|['"]\s*/|/\s*(?:[rbu]?['"]|\w)""")
_LITERAL = re.compile(r"""^[rbuRBU]?(['"])([^'"\n\\]*)\1$""")
_ARGV = re.compile(r"^sys\.argv\[(\d+)\]$")
_WRAPPED = re.compile(r"^(?:Path|pathlib\.Path|str|os\.path\.abspath|os\.path\.normpath)\(\s*(.*?)\s*\)$")
# What this reader does not follow: the AST does.
_HARD = re.compile(
    r"""^[ \t]*for\s+\w+\s+in\s+[\[(]\s*[rbu]?['"]|^[ \t]*\w+\s*,\s*\w+[\w, ]*=[^=\n]*argv""", re.M
)
_UNREAD = re.compile(r"join\(|\s/\s|[()]")


def _value(expr: str, names: dict[str, str], argv: Sequence[str]) -> str | None:
    expr = expr.strip()
    for _ in range(3):
        wrapped = _WRAPPED.match(expr)
        if not wrapped:
            break
        expr = wrapped.group(1)
    literal = _LITERAL.match(expr)
    if literal:
        return literal.group(2)
    if expr.isidentifier():
        return names.get(expr)
    index = _ARGV.match(expr)
    if index and int(index.group(1)) >= 1:
        at = int(index.group(1)) - 1
        return argv[at] if at < len(argv) else None
    return None


def _is_call(code: str, at: int, kind: str) -> bool:
    """Whether the name at ``at`` stands alone (``open(`` but not ``fopen(`` or ``x.open(``)."""
    if at == 0:
        return True
    before = code[at - 1]
    if kind == "open" and before == ".":
        return code[max(0, at - 7) : at].endswith(_PREFIXES)
    return not (before.isalnum() or before in "_.")


def _calls(code: str) -> list[tuple[int, str, re.Match[str], str]] | None:
    """(position, kind, match, receiver) of every call the reader follows, in text order; ``None`` when
    one of them is beyond it (a nested path expression, a line break inside the call)."""
    found: list[tuple[int, str, re.Match[str], str]] = []
    for kind, word, loose in _LOOSE:
        if word and word not in code:
            continue
        starts = [m.start() for m in loose.finditer(code) if _is_call(code, m.start(), kind)]
        if not starts:
            continue
        strict = _STRICT[kind]
        for at in starts:
            match = strict.match(code, at)
            if match is None:
                return None
            found.append((at, kind, match, ""))
    if "." in code:
        for m in _METHOD.finditer(code):
            receiver = _RECEIVER.search(code, max(0, m.start() - 200), m.start())
            if receiver is None:
                return None
            if m.group("op") == "unlink" and receiver.group(0).strip() == "os":
                continue  # os.unlink(p): the rm kind
            found.append((receiver.start(), "meth", m, receiver.group(0).strip()))
    found.sort(key=lambda f: f[0])
    return found


def scan(code: str, argv: Sequence[str] = ()) -> list[tuple[str, str]] | None:
    """``(kind, path)`` in source order, as ``pyscript`` defines them, or ``None``: parse it instead."""
    if ("for " in code or "argv" in code) and _HARD.search(code):
        return None
    calls = _calls(code)
    if calls is None:
        return None
    events: list[tuple[int, int, re.Match[str] | None, str, str]] = [
        (at, 0, m, kind, receiver) for at, kind, m, receiver in calls
    ]
    events += [(m.end(), 1, m, "assign", "") for m in _ASSIGN.finditer(code)]  # after its line's calls
    events.sort(key=lambda e: (e[0], e[1]))
    names: dict[str, str] = {}
    reads: set[str] = set()
    effects: list[tuple[str, str]] = []

    def value(expr: str) -> str | bool | None:
        """The path, ``None`` when unknown, ``False`` when it needs the AST."""
        path = _value(expr, names, argv)
        if path is None and _UNREAD.search(expr.strip()[5:] if expr.strip().startswith("Path(") else expr):
            return False
        return path

    def read_later_on_line(path: str, at: int) -> bool:
        """``p.write_text(p.read_text())``: the read in the arguments runs first."""
        end = code.find("\n", at)
        rest = code[at : len(code) if end < 0 else end]
        for _, kind, later, receiver in _calls(rest) or ():
            if kind == "open" and not any(c in (later.group("mode") or "r") for c in "wax+"):
                if _value(later.group("oarg"), names, argv) == path:
                    return True
            elif (
                kind == "meth"
                and later.group("op").startswith("read")
                and _value(receiver, names, argv) == path
            ):
                return True
        return False

    def written(path: str, at: int) -> tuple[str, str]:
        return ("write" if path in reads or read_later_on_line(path, at) else "output", path)

    for _, order, match, kind, receiver in events:
        assert match is not None
        if order == 1:
            bound = _value(match.group(2), names, argv)
            if bound is None and _JOINED.search(match.group(2)):
                return None  # ``p = Path('src') / 'b.py'``, ``os.path.join(...)``: the AST reads it
            if bound is None:
                names.pop(match.group(1), None)
            else:
                names[match.group(1)] = bound
            continue
        if kind == "open":
            path = value(match.group("oarg"))
            if path is False:
                return None
            mode = match.group("mode") or "r"
            if isinstance(path, str):
                if any(c in mode for c in "wax+"):
                    effects.append(written(path, match.end()))
                else:
                    reads.add(path)
        elif kind == "meth":
            path = value(receiver)
            if path is False:
                return None
            if not isinstance(path, str):
                continue
            op = match.group("op")
            if op.startswith("write"):
                effects.append(written(path, match.end()))
            elif op.startswith("read"):
                reads.add(path)
            elif code[match.end() : match.end() + 1] == ")":  # p.unlink()
                effects.append(("delete", path))
        elif kind == "two":
            src, dst = value(match.group("a")), value(match.group("b"))
            if src is False or dst is False:
                return None
            if match.group("fn") in {"shutil.move", "os.replace", "os.rename"} and isinstance(src, str):
                effects.append(("delete", src))
            if isinstance(dst, str):
                shutil = match.group("fn").startswith("shutil")
                effects.append(("create", dst) if shutil else written(dst, match.end()))
        elif kind in {"rm", "fi"}:
            path = value(match.group("r" if kind == "rm" else "f"))
            if path is False:
                return None
            if isinstance(path, str):
                effects.append(("delete" if kind == "rm" else "write", path))
    return effects
