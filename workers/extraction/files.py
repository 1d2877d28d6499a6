"""Files touched by a turn, and the symbols changed in them.

Pure. Walks the turn's tool events in order and turns each into file operations: structured edits and
writes (skipped when the tool reported failure or nothing changed), patch tools and ``diff`` fields,
apply_patch envelopes, shell writes (``shell_writes``), Python cells, and diffs found in unknown tools'
inputs and outputs. Reads touch nothing. Rules applied at the end:

- a file created and deleted in the same turn is scratch (``reproduce.py``), not a fix file;
- a deleted file that existed before the turn is a change (it stays in the list);
- ``git checkout -- f`` / ``git restore f`` undoes the turn's changes to ``f``;
- the last full ``git diff`` (or SWE-agent ``submit``) printed in the turn is authoritative: the list is its
  files plus whatever was touched after it;
- paths are workspace-relative, deduplicated, in first-touched order; ``/dev/null``, temp dirs and paths
  outside the workspace are dropped (``paths.PathResolver``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ingest.schema import ToolEvent
from workers.extraction.diffs import DiffFile, looks_like_patch, parse_patch
from workers.extraction.limits import Limits, clip, scan_window
from workers.extraction.paths import PathResolver
from workers.extraction.shell import parse_commands
from workers.extraction.shell_writes import FileOp, python_effects, shell_effects
from workers.extraction.symbols import symbols_from_edit, symbols_from_hunks
from workers.extraction.tools import Family, edit_failed, family_of, path_of, shell_command_of, strings_of

_WRITE_LIKE_TOOL = re.compile(r"edit|writ|creat|patch|replac|insert|modif|updat|save|append", re.IGNORECASE)
_DIFF_VIEW_FLAGS = {
    "--stat",
    "--name-only",
    "--name-status",
    "--shortstat",
    "--numstat",
    "--check",
    "--no-patch",
    "-s",
    "--summary",
    "--quiet",
    "--exit-code",
}
_DIFF_REVS = re.compile(r"^(?:HEAD|@|[0-9a-f]{7,40})(?:[~^]\d*)*$")
_CWD_KEYS = ("cwd", "workdir", "working_dir", "dir")
_SEEN_CHARS = 200_000


@dataclass
class _Touch:
    created: bool
    alive: bool = True


@dataclass
class FilesResult:
    """The turn's fix files (workspace-relative, first-touched order) and the symbols changed in them."""

    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    authoritative_diff: bool = False  # whether a final git diff decided the list


def prints_full_diff(command: str) -> bool:
    """Whether a command line prints the whole working-tree diff (``git diff``, ``--cached``, ``submit``)."""
    if "diff" not in command and "submit" not in command:
        return False
    for cmd in parse_commands(command):
        argv = list(cmd.words)
        if argv[:1] == ["submit"]:
            return True
        if argv[:1] != ["git"]:
            continue
        args = argv[1:]
        while args and args[0].startswith("-"):
            flag = args.pop(0)
            if flag in {"-C", "-c"} and args:
                args.pop(0)
        if args[:1] != ["diff"] or _DIFF_VIEW_FLAGS & set(args):
            continue
        rest = [a for a in args[1:] if a != "--"]
        if all(a.startswith("-") or _DIFF_REVS.match(a) for a in rest):
            return True
    return False


class _Collector:
    """Mutable walk state: the ops seen so far, the shell's cwd, files written whole, symbol candidates."""

    def __init__(self, resolver: PathResolver, limits: Limits) -> None:
        self.resolver = resolver
        self.limits = limits
        self.ops: list[tuple[int, str, str]] = []  # (event index, kind, resolved path)
        self.cwd: str | None = resolver.workspace or None
        self.contents: dict[str, str] = {}
        self.symbols: dict[str, list[str]] = {}
        self.final_diff: tuple[int, list[DiffFile]] | None = None
        self.seen: dict[str, str] = {}  # path -> the last content a read showed (locates edits' symbols)

    def add(self, index: int, op: FileOp) -> None:
        path = self.resolver.resolve(op.path, op.cwd)
        if path is not None:
            self.ops.append((index, op.kind, path))

    def add_symbols(self, path: str | None, names: list[str]) -> None:
        if path and names:
            bucket = self.symbols.setdefault(path, [])
            bucket.extend(n for n in names if n not in bucket)

    def add_diffs(self, index: int, diffs: list[DiffFile], cwd: str | None = None) -> None:
        for diff in diffs:
            if diff.old_path and diff.status == "renamed":
                self.add(index, FileOp("delete", diff.old_path, cwd))
            kind = {"added": "create", "deleted": "delete"}.get(diff.status, "write")
            self.add(index, FileOp(kind, diff.path, cwd))
            self.add_symbols(self.resolver.resolve(diff.path, cwd), symbols_from_hunks(diff.path, diff.hunks))


def _edit_texts(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    edits = arguments.get("edits")
    if isinstance(edits, list):
        for edit in edits:
            if isinstance(edit, dict):
                pairs.append(
                    (
                        str(edit.get("old_string") or edit.get("old_str") or ""),
                        str(edit.get("new_string") or edit.get("new_str") or ""),
                    )
                )
    old = arguments.get("old_str", arguments.get("old_string", ""))
    new = arguments.get(
        "new_str", arguments.get("new_string", arguments.get("content", arguments.get("file_text")))
    )
    if isinstance(old, str) and isinstance(new, str):
        pairs.append((old, new))
    return pairs


def _structured(c: _Collector, index: int, event: ToolEvent, family: Family) -> None:
    arguments = event.input
    raw_path = path_of(arguments)
    if raw_path is None or edit_failed(event.output, event.exit_code, event.ok):
        return
    pairs = _edit_texts(arguments)
    if family is Family.EDIT and pairs and all(old == new for old, new in pairs):
        return
    sub = str(arguments.get("command", "")).lower()
    kind = "create" if family is Family.WRITE or sub == "create" else "write"
    c.add(index, FileOp(kind, raw_path, None))
    path = c.resolver.resolve(raw_path)
    seen = c.seen.get(path or "", "")
    for old, new in pairs:
        text_old = old if family is Family.EDIT else ""
        c.add_symbols(
            path,
            symbols_from_edit(
                raw_path,
                clip(text_old, c.limits.max_input_chars),
                clip(new, c.limits.max_input_chars),
                seen or event.output[:20_000],
            ),
        )


def _shell(c: _Collector, index: int, event: ToolEvent) -> None:
    command = clip(shell_command_of(event.input), c.limits.max_input_chars) or event.tool.strip().lower()
    start = next(
        (v for k in _CWD_KEYS if isinstance(v := event.input.get(k), str) and v.startswith("/")), c.cwd
    )
    effects = shell_effects(command, start, c.contents)
    c.cwd = effects.cwd if effects.cwd else c.cwd
    for op in effects.ops:
        c.add(index, op)
    if event.exit_code in {126, 127}:
        return
    if prints_full_diff(command):
        diffs = parse_patch(scan_window(event.output, c.limits))
        if diffs:
            c.final_diff = (index, diffs)
            for diff in diffs:
                c.add_symbols(c.resolver.resolve(diff.path), symbols_from_hunks(diff.path, diff.hunks))


def _remember(c: _Collector, event: ToolEvent) -> None:
    """Keep what a read showed of a file (a window of it), so a later edit's enclosing definition is found."""
    raw_path = path_of(event.input)
    if raw_path and event.output and not edit_failed(event.output, event.exit_code, event.ok):
        path = c.resolver.resolve(raw_path)
        if path is not None:
            c.seen[path] = event.output[:_SEEN_CHARS]


def _diffs_in(c: _Collector, index: int, texts: Sequence[str]) -> None:
    for text in texts:
        if looks_like_patch(text):
            c.add_diffs(index, parse_patch(text))


def collect_files(events: Sequence[ToolEvent], resolver: PathResolver, limits: Limits) -> FilesResult:
    """The files a turn's tool events touched and the symbols changed in them (module rules apply)."""
    c = _Collector(resolver, limits)
    for index, event in enumerate(events):
        family = family_of(event.tool, event.input)
        if family is Family.READ:
            _remember(c, event)
            continue
        if family is Family.SHELL or event.tool.strip().lower() == "submit":
            _shell(c, index, event)
        elif family in {Family.EDIT, Family.WRITE}:
            _structured(c, index, event, family)
        elif family is Family.PATCH:
            if not edit_failed(event.output, event.exit_code, event.ok):
                _diffs_in(c, index, strings_of(event.input, limits.max_input_chars))
        elif family is Family.PYTHON:
            code = event.input.get("code", event.input.get("command", ""))
            if isinstance(code, str) and not edit_failed(event.output, event.exit_code, event.ok):
                for op in python_effects(clip(code, limits.max_input_chars), None):
                    c.add(index, op)
        else:
            if _WRITE_LIKE_TOOL.search(event.tool) and path_of(event.input):
                _structured(c, index, event, Family.EDIT)
            _diffs_in(
                c,
                index,
                [*strings_of(event.input, limits.max_input_chars), scan_window(event.output, limits)],
            )
        if event.diff and not (
            family is Family.EDIT and edit_failed(event.output, event.exit_code, event.ok)
        ):
            _diffs_in(c, index, [clip(event.diff, limits.max_input_chars)])
    return _finish(c, limits)


def _replay(ops: Sequence[tuple[int, str, str]]) -> dict[str, _Touch]:
    touched: dict[str, _Touch] = {}
    for _, kind, path in ops:
        if kind == "revert":
            touched.pop(path, None)
        elif kind == "delete":
            under = [p for p in touched if p.startswith(path.rstrip("/") + "/")]
            for child in under:
                touched[child].alive = False
            if path in touched:
                touched[path].alive = False
            elif not under and "." in path.rsplit("/", 1)[-1]:
                touched[path] = _Touch(created=False, alive=False)
        else:
            touch = touched.setdefault(path, _Touch(created=kind == "create"))
            touch.alive = True
    return touched


def _finish(c: _Collector, limits: Limits) -> FilesResult:
    touched = _replay(c.ops)
    kept = [p for p, t in touched.items() if t.alive or not t.created]
    authoritative = c.final_diff is not None
    if c.final_diff is not None:
        at, diffs = c.final_diff
        from_diff = [p for d in diffs if (p := c.resolver.resolve(d.path)) is not None]
        later = _replay([op for op in c.ops if op[0] > at])
        later_kept = [p for p, t in later.items() if t.alive or not t.created]
        order = {p: i for i, p in enumerate(touched)}
        from_diff.sort(key=lambda p: order.get(p, len(order)))
        kept = list(dict.fromkeys([*from_diff, *later_kept]))
    files = kept[: limits.max_files]
    symbols: list[str] = []
    for path in files:
        for name in c.symbols.get(path, []):
            if name not in symbols and len(symbols) < limits.max_symbols:
                symbols.append(name)
    qualified = {name.rsplit(".", 1)[-1] for name in symbols if "." in name}
    symbols = [name for name in symbols if "." in name or name not in qualified]
    return FilesResult(files=files, symbols=symbols, authoritative_diff=authoritative)
