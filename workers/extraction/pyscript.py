"""Files a Python program writes, read from its source: the edit scripts agents write and run.

Pure. Input: the code, and the arguments it runs with (``sys.argv[1:]``) when known. Output: ``(kind,
path)`` pairs in source order, kind ``write`` (the code read that file before: read, change, write back),
``output`` (written without being read: a program's output, an edit only when the turn names the file
otherwise), ``create`` (the destination of a copy or move) or ``delete``.

Recognized, on a string literal, a name bound to one (``file_path = 'django/utils/http.py'``), a
``Path(...)`` of those, ``os.path.join`` of those, or ``sys.argv[N]``:
``open(p, 'w'|'a'|'x'|'r+'…)`` (also ``io.open``, ``codecs.open``, ``mode=``), ``p.write_text`` /
``write_bytes``, ``shutil.copy|copy2|copyfile|move``, ``os.replace|rename``, ``os.remove|unlink``,
``p.unlink()``, ``fileinput.input(p, inplace=True)``. Reads: ``open(p)`` / ``open(p, 'r')``,
``p.read_text|read_bytes``. Code that does not parse falls back to the regex reader (literals only).
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
from collections.abc import Callable, Sequence
from typing import Any

from workers.extraction.pyscan import scan

_PY_OPEN = re.compile(
    r"""open\(\s*(?:r|f|rb|b)?(['"])([^'"\n]+)\1\s*,\s*(?:mode\s*=\s*)?(['"])([^'"]*[wax+][^'"]*)\3"""
)
_PY_PATH_WRITE = re.compile(r"""Path\(\s*(['"])([^'"\n]+)\1\s*\)\s*\.\s*write_(?:text|bytes)\(""")
# Cheap first test: code without any of these (a write mode literal, a writing call) writes no file we can
# name. Most scripts agents run only print.
_WRITE_WORDS = ("open(", "write_", "shutil.", "os.re", "os.unlink", ".unlink(", "inplace")
_MAY_WRITE = re.compile(
    r"""open\((?:[^()\n]|\([^()\n]*\))*,\s*(?:mode\s*=\s*)?['"][rbt]*[wax+]"""
    r"""|write_(?:text|bytes)|shutil\.(?:copy|move)|os\.(?:replace|rename|remove|unlink)|\.unlink\(|inplace"""
)


def regex_writes(code: str) -> list[str]:
    """Literal paths of ``open(…, 'w')`` and ``Path(…).write_text`` (the fallback reader)."""
    paths = [m.group(2) for m in _PY_OPEN.finditer(code)]
    paths += [m.group(2) for m in _PY_PATH_WRITE.finditer(code)]
    return paths


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


class _Reader(ast.NodeVisitor):
    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.names: dict[str, str] = {}
        self.effects: list[tuple[str, str]] = []
        self.reads: set[str] = set()

    def visit(self, node: ast.AST) -> None:
        """Dispatch on the three node types that matter (faster than ``NodeVisitor``'s by-name lookup)."""
        handler = _HANDLERS.get(type(node))
        if handler is None:
            self.generic_visit(node)
        else:
            handler(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _LEAVES):
                self.visit(child)

    def write(self, path: str) -> None:
        """A write: an edit when the code read the file before (read, change, write back)."""
        self.effects.append(("write" if path in self.reads else "output", path))

    def value(self, node: ast.AST | None) -> str | None:
        """The path an expression stands for, when the source says it."""
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Subscript) and _dotted(node.value) == "sys.argv":
            index = node.slice
            if isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value >= 1:
                return self.argv[index.value - 1] if index.value - 1 < len(self.argv) else None
            return None
        if isinstance(node, ast.Call):
            func = _dotted(node.func)
            if func in {"Path", "pathlib.Path", "str", "os.path.abspath", "os.path.normpath"} and node.args:
                parts = [self.value(a) for a in node.args]
                if all(p is not None for p in parts):
                    return posixpath.join(*[p for p in parts if p is not None])
            if func == "os.path.join" and node.args:
                parts = [self.value(a) for a in node.args]
                if all(p is not None for p in parts):
                    return posixpath.join(*[p for p in parts if p is not None])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path('a') / 'b.py'
            left, right = self.value(node.left), self.value(node.right)
            if left is not None and right is not None:
                return posixpath.join(left, right)
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        if isinstance(node.value, ast.Tuple):  # a, b = sys.argv[1], 'x.py'
            for target in node.targets:
                if isinstance(target, ast.Tuple) and len(target.elts) == len(node.value.elts):
                    for name, value in zip(target.elts, node.value.elts, strict=True):
                        self.bind(name, self.value(value))
            return
        path = self.value(node.value)
        for target in node.targets:
            self.bind(target, path)

    def bind(self, target: ast.AST, path: str | None) -> None:
        """``target = <path or unknown>``: a name bound to an unknown value forgets its path."""
        if isinstance(target, ast.Name):
            if path is not None:
                self.names[target.id] = path
            else:
                self.names.pop(target.id, None)

    def visit_For(self, node: ast.For) -> None:
        # for f in ['a.py', 'b.py']: open(f, 'w') — each literal of the loop's list
        items = node.iter.elts if isinstance(node.iter, ast.List | ast.Tuple) else []
        paths = [p for p in (self.value(e) for e in items) if p is not None]
        if isinstance(node.target, ast.Name) and paths and len(paths) == len(items):
            for path in paths:
                self.names[node.target.id] = path
                for child in node.body:
                    self.visit(child)
            self.names.pop(node.target.id, None)
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = _dotted(node.func)
        args = node.args
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        short = func.rsplit(".", 1)[-1]
        if func in {"open", "io.open", "codecs.open"} and args:
            path = self.value(args[0])
            mode_node = args[1] if len(args) > 1 else keywords.get("mode")
            mode = mode_node.value if isinstance(mode_node, ast.Constant) else "r"
            if path is not None and isinstance(mode, str):
                if any(c in mode for c in "wax+"):
                    self.write(path)
                else:
                    self.reads.add(path)
        elif isinstance(node.func, ast.Attribute) and short in {"write_text", "write_bytes"}:
            path = self.value(node.func.value)
            if path is not None:
                self.write(path)
        elif isinstance(node.func, ast.Attribute) and short in {"read_text", "read_bytes"}:
            path = self.value(node.func.value)
            if path is not None:
                self.reads.add(path)
        elif isinstance(node.func, ast.Attribute) and short == "unlink" and not args:
            path = self.value(node.func.value)
            if path is not None:
                self.effects.append(("delete", path))
        elif func in {"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move"} and len(args) > 1:
            src, dst = self.value(args[0]), self.value(args[1])
            if func == "shutil.move" and src is not None:
                self.effects.append(("delete", src))
            if dst is not None:
                self.effects.append(("create", dst))
        elif func in {"os.replace", "os.rename"} and len(args) > 1:
            src, dst = self.value(args[0]), self.value(args[1])
            if src is not None:
                self.effects.append(("delete", src))
            if dst is not None:
                self.write(dst)  # ``os.replace(tmp, path)`` after reading ``path``: an edit
        elif func in {"os.remove", "os.unlink"} and args:
            path = self.value(args[0])
            if path is not None:
                self.effects.append(("delete", path))
        elif func == "fileinput.input" and args:
            inplace = keywords.get("inplace")
            path = self.value(args[0])
            if path is not None and isinstance(inplace, ast.Constant) and inplace.value:
                self.effects.append(("write", path))


# Nodes with nothing below them that could write a file: not descended into.
_LEAVES = (
    ast.Constant,
    ast.Name,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.alias,
)
_HANDLERS: dict[type[ast.AST], Callable[[_Reader, Any], None]] = {
    ast.Assign: _Reader.visit_Assign,
    ast.For: _Reader.visit_For,
    ast.Call: _Reader.visit_Call,
}


def python_file_effects(code: str, argv: Sequence[str] = ()) -> list[tuple[str, str]]:
    """``(kind, path)`` of the files ``code`` writes, copies, moves or deletes (see the module doc)."""
    if not any(word in code for word in _WRITE_WORDS) or not _MAY_WRITE.search(code):
        return []
    if len(code) > _CACHE_MAX_CHARS:
        return _effects(code, tuple(argv))
    return list(_cached_effects(code, tuple(argv)))


_CACHE_MAX_CHARS = 20_000
_MAX_CODE_CHARS = 200_000  # a longer program is read up to here


def _effects(code: str, argv: tuple[str, ...]) -> list[tuple[str, str]]:
    fast = scan(code, argv)  # plain scripts: the regex reader, ~50x cheaper than parsing
    if fast is not None:
        return fast
    try:
        tree = ast.parse(code[:_MAX_CODE_CHARS])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [("write", p) for p in regex_writes(code)]
    reader = _Reader(argv)
    try:
        reader.visit(tree)
    except RecursionError:
        return [("write", p) for p in regex_writes(code)]
    return reader.effects


# A turn runs the same script again and again (``python reproduce.py`` after each edit): parse it once.
_cached_effects = functools.lru_cache(maxsize=512)(lambda code, argv: tuple(_effects(code, argv)))
