"""Files touched by a turn, and the symbols changed in them.

Pure. Walks the turn's tool events in order and turns each into file operations: structured edits and
writes (skipped when the tool reported failure or nothing changed), patch tools and ``diff`` fields,
apply_patch envelopes, shell writes (``shell_writes``), Python cells, and diffs found in unknown tools'
inputs and outputs. Reads touch nothing. Rules applied at the end:

- a file created and deleted in the same turn is scratch (``reproduce.py``), not a fix file, and so is
  whatever the turn touched under a directory it removes with ``rm -rf``;
- a deleted file that existed before the turn is a change (it stays in the list);
- ``git checkout -- f`` / ``git restore f`` undoes the turn's changes to ``f``;
- ``git stash`` sets the turn's changes to tracked files aside, ``git stash pop|apply`` brings them back;
- a file a program wrote without reading it (``open('out.fits', 'w')`` in a script) and a file removed
  without the turn touching it before, when it is not source or configuration (``rm db.sqlite3``) or
  removed with ``rm -f`` (a clean-up that does not care whether it exists), are a program's outputs,
  not edits, unless the turn edits the file otherwise (``sed -i``, a heredoc, an edit tool) or a read
  tool showed it (a program then rewrote a file the agent had read);
- the last of git's own listings wins: a full ``git diff`` (or SWE-agent ``submit``) decides the list (its
  files plus whatever was touched after it); a ``git status`` or ``git diff --stat|--name-only|
  --name-status`` (``git_evidence``) decides for the files it covers; a ``git diff -- <paths> > patch.txt``
  (the patch the agent writes out to submit, ``git_evidence.declared_patch``) decides the list too: the
  touched files under those paths and the paths themselves (a file touched outside them, before or
  after, is left out of the patch by the agent's choice: a reproduction script, a fix to run the tests);
- ``harness_meta.changed_files`` (the SDK's before/after snapshot of the working tree), when the harness
  sends it, is the truth and replaces all of the above;
- paths are workspace-relative, deduplicated, in first-touched order; ``/dev/null``, temp dirs and paths
  outside the workspace are dropped (``paths.PathResolver``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ingest.schema import ToolEvent
from workers.extraction.calls import Call, classify, prints_full_diff
from workers.extraction.diffs import DiffFile, looks_like_patch, parse_patch
from workers.extraction.git_evidence import GitEvidence, declared_patch, evidence_of
from workers.extraction.limits import Limits, clip
from workers.extraction.paths import PathResolver
from workers.extraction.shell_writes import FileOp, python_effects, shell_effects
from workers.extraction.symbols import symbols_from_edit, symbols_from_hunks
from workers.extraction.tools import Family, path_of, strings_of

__all__ = ["FilesResult", "collect_files", "edit_texts", "prints_full_diff"]

_WRITE_LIKE_TOOL = re.compile(r"edit|writ|creat|patch|replac|insert|modif|updat|save|append", re.IGNORECASE)
_SYNTAX_ERROR = re.compile(r"syntax error near unexpected token|unexpected EOF while looking for matching")
# A file the turn never touched and then removes is a change when it is source or configuration; anything
# else (``out.fits``, ``db.sqlite3``, ``plot.png``, ``debug.log``) is a program's output being cleaned up.
_SOURCE_EXTENSIONS = frozenset({
        "py", "pyi", "pyx", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "java", "kt", "kts",
        "scala", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "fs", "rb", "php", "swift", "m", "mm",
        "sh", "bash", "zsh", "ps1", "lua", "pl", "pm", "r", "jl", "ex", "exs", "erl", "hs", "ml", "clj",
        "dart", "vue", "svelte", "sql", "proto", "toml", "yaml", "yml", "cfg", "ini", "md", "rst", "in",
})  # fmt: skip
_LISTING_HINT = re.compile(r"\bstatus\b|--(?:stat|name-only|name-status|numstat)\b")
_NOT_REMOVED = re.compile(r"cannot remove '([^'\n]+)': No such file")
_CWD_KEYS = ("cwd", "workdir", "working_dir", "dir")
_SEEN_CHARS = 200_000


@dataclass
class _Touch:
    created: bool
    alive: bool = True
    weak: bool = False  # only a program's output or an untouched file removed: an edit if named otherwise


@dataclass
class FilesResult:
    """The turn's fix files (workspace-relative, first-touched order) and the symbols changed in them."""

    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    authoritative_diff: bool = False  # whether a final git diff decided the list
    # Event indexes of the first and the last change to one of ``files`` (None: no change seen, e.g. the
    # harness's list only), and the files the turn created and deleted again (scratch: ``reproduce.py``).
    edit_span: tuple[int, int] | None = None
    scratch: list[str] = field(default_factory=list)


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
        self.evidence: tuple[int, GitEvidence, str | None] | None = None  # git's last listing, its cwd
        # calls that may print a git listing: (event index, command, output, exit code, cwd)
        self.listings: list[tuple[int, str, str, int | None, str | None]] = []
        self.declared: tuple[int, tuple[str, ...], str | None] | None = None  # last ``git diff -- p > f``

    def add(self, index: int, op: FileOp) -> None:
        if op.kind in {"stash", "unstash"}:
            self.ops.append((index, op.kind, ""))
            return
        path = self.resolver.resolve(op.path, op.cwd)
        if path is None and op.kind == "revert" and op.path.rstrip("/") in {".", ""}:
            base = self.resolver.resolve(op.cwd or "") if op.cwd != self.resolver.workspace else None
            path = base or "."  # ``git checkout .``: everything under the directory
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


def edit_texts(arguments: dict[str, Any]) -> list[tuple[str, str]]:
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


def _structured(c: _Collector, call: Call, family: Family) -> None:
    index, event = call.index, call.event
    arguments = event.input
    raw_path = path_of(arguments)
    if raw_path is None or call.failed():
        return
    pairs = edit_texts(arguments)
    if family is Family.EDIT and pairs and all(old == new for old, new in pairs):
        return
    sub = str(arguments.get("command", "")).lower()
    kind = "create" if family is Family.WRITE or sub == "create" else "write"
    c.add(index, FileOp(kind, raw_path, None))
    path = c.resolver.resolve(raw_path)
    seen = c.seen.get(path or "", "")
    for old, new in pairs:
        text_old = clip(old if family is Family.EDIT else "", c.limits.max_input_chars)
        text_new = clip(new, c.limits.max_input_chars)
        names = (
            symbols_from_edit(raw_path, text_old, text_new, seen)
            if seen
            else call.edit_symbols(raw_path, text_old, text_new)  # changes asks the same: made once
        )
        c.add_symbols(path, names)


def _shell(c: _Collector, call: Call, *, persistent_cwd: bool) -> None:
    index, event = call.index, call.event
    command = call.command or call.tool
    default = c.cwd if persistent_cwd else (c.resolver.workspace or None)
    start = next(
        (v for k in _CWD_KEYS if isinstance(v := event.input.get(k), str) and v.startswith("/")), default
    )
    effects = shell_effects(command, start, c.contents)
    if persistent_cwd and effects.cwd:
        c.cwd = effects.cwd
    if not (event.exit_code == 2 and _SYNTAX_ERROR.search(event.output[:2_000])):  # else nothing ran
        missing: set[str] = set()
        if effects.ops and "cannot remove" in event.output:
            missing = set(_NOT_REMOVED.findall(event.output[:20_000]))
        for op in effects.ops:
            if not (op.kind in {"delete", "discard"} and op.path in missing):  # it was not there
                c.add(index, op)
    if event.exit_code in {126, 127}:
        return
    if "git" in command and (specs := declared_patch(command, event.exit_code)) is not None:
        c.declared = (index, specs, effects.cwd or start)
    if "git" in command and _LISTING_HINT.search(command):  # read at the end, only if it can decide
        c.listings.append((index, command, event.output, event.exit_code, effects.cwd or start))
    diffs = call.full_diff()  # ``git status && git diff``: no listing (two commands), a full diff
    if diffs:
        c.final_diff = (index, diffs)
        for diff in diffs:
            c.add_symbols(c.resolver.resolve(diff.path), symbols_from_hunks(diff.path, diff.hunks))


def _remember(c: _Collector, call: Call) -> None:
    """Keep what a read showed of a file (a window of it), so a later edit's enclosing definition is found."""
    event = call.event
    raw_path = path_of(event.input)
    if raw_path and event.output and not call.failed():
        path = c.resolver.resolve(raw_path)
        if path is not None:
            c.seen[path] = event.output[:_SEEN_CHARS]


def _diffs_in(c: _Collector, index: int, texts: Sequence[str]) -> None:
    for text in texts:
        if looks_like_patch(text):
            c.add_diffs(index, parse_patch(text))


def collect_files(
    events: Sequence[ToolEvent],
    resolver: PathResolver,
    limits: Limits,
    *,
    persistent_cwd: bool = True,
    changed_files: Sequence[str] | None = None,
    calls: Sequence[Call] | None = None,
) -> FilesResult:
    """The files a turn's tool events touched and the symbols changed in them (module rules apply).

    ``persistent_cwd``: whether a ``cd`` in one shell call holds for the next (a live shell session);
    false for harnesses that run each command in a fresh subshell (mini-swe-agent). ``changed_files``:
    the harness's own list of the files the turn changed; when given it is the list. ``calls``: the
    events' ``calls.classify`` when the caller has it (``extract`` does), else it is made here."""
    c = _Collector(resolver, limits)
    for call in calls if calls is not None else classify(events, limits):
        index, event, family = call.index, call.event, call.family
        if family is Family.READ:
            _remember(c, call)
            continue
        if call.shell_like:
            _shell(c, call, persistent_cwd=persistent_cwd)
        elif family in {Family.EDIT, Family.WRITE}:
            _structured(c, call, family)
        elif family is Family.PATCH:
            if not call.failed():
                _diffs_in(c, index, strings_of(event.input, limits.max_input_chars))
        elif family is Family.PYTHON:
            code = event.input.get("code", event.input.get("command", ""))
            if isinstance(code, str) and not call.failed():
                for op in python_effects(clip(code, limits.max_input_chars), None):
                    c.add(index, op)
        else:
            if _WRITE_LIKE_TOOL.search(event.tool) and path_of(event.input):
                _structured(c, call, Family.EDIT)
            _diffs_in(c, index, [*strings_of(event.input, limits.max_input_chars), call.window()])
        if event.diff and not (family is Family.EDIT and call.failed()):
            _diffs_in(c, index, [clip(event.diff, limits.max_input_chars)])
    if changed_files is not None:
        truth = [p for f in changed_files if (p := resolver.resolve(f)) is not None]
        return _symbols_of(c, list(dict.fromkeys(truth))[: limits.max_files], limits, authoritative=True)
    return _finish(c, limits)


def _replay(ops: Sequence[tuple[int, str, str]]) -> dict[str, _Touch]:
    touched: dict[str, _Touch] = {}
    stashed: dict[str, _Touch] = {}
    for _, kind, path in ops:
        if kind == "revert":
            for child in [p for p in touched if p == path or p.startswith(path + "/") or path == "."]:
                del touched[child]
        elif kind == "stash":  # tracked changes set aside; files the turn created stay
            stashed = {p: t for p, t in touched.items() if not t.created}
            touched = {p: t for p, t in touched.items() if t.created}
        elif kind == "unstash":
            touched.update(stashed)
            stashed = {}
        elif kind in {"delete", "discard"}:
            under = [p for p in touched if p.startswith(path.rstrip("/") + "/")]
            for child in under:
                if kind == "discard":  # ``rm -rf repro/``: a scratch tree the turn made and cleans up
                    del touched[child]
                else:
                    touched[child].alive = False
            if path in touched:
                touched[path].alive = False
            elif not under and "." in path.rsplit("/", 1)[-1]:
                source = kind == "delete" and path.rsplit(".", 1)[-1].lower() in _SOURCE_EXTENSIONS
                touched[path] = _Touch(created=False, alive=False, weak=not source)
        else:
            touch = touched.setdefault(path, _Touch(created=kind == "create", weak=kind == "output"))
            touch.alive = True
            touch.weak = touch.weak and kind == "output"
    return touched


def _named(c: _Collector) -> set[str]:
    """Files a read tool showed: a program's output there is a rewrite of a file the agent looked at."""
    return set(c.seen)


def _kept(touched: dict[str, _Touch], named: set[str] | None) -> list[str]:
    return [
        p
        for p, t in touched.items()
        if (t.alive or not t.created) and (not t.weak or (named is not None and p in named))
    ]


def _with_evidence(c: _Collector, touched: dict[str, _Touch], kept: list[str], named: set[str]) -> list[str]:
    """The list once git's last listing decides for the files it covers (``git_evidence``)."""
    assert c.evidence is not None
    at, ev, cwd = c.evidence
    base = cwd if ev.relative_to_cwd else (c.resolver.workspace or None)
    listed = [p for f in ev.files + ev.deleted if (p := c.resolver.resolve(f, base)) is not None]
    dirs = [p for d in ev.untracked_dirs if (p := c.resolver.resolve(d.rstrip("/"), base)) is not None]
    before = _replay([op for op in c.ops if op[0] <= at])
    listed += [p for p in before if before[p].alive and any(p.startswith(d + "/") for d in dirs)]
    specs = [p for s in ev.pathspecs if (p := c.resolver.resolve(s.rstrip("/"), base)) is not None]

    def covered(path: str) -> bool:
        in_spec = not ev.pathspecs or any(path == s or path.startswith(s + "/") for s in specs)
        tracked = not (path in before and before[path].created)
        return in_spec and (ev.covers_untracked or tracked)

    later = _kept(_replay([op for op in c.ops if op[0] > at]), named)
    order = {p: i for i, p in enumerate(touched)}
    outputs = {p for p, t in touched.items() if t.weak and p not in named}  # git lists them; not edits
    decided = sorted(
        dict.fromkeys(p for p in listed if p not in outputs), key=lambda p: order.get(p, len(order))
    )
    rest = [p for p in kept if not covered(p)]
    return list(dict.fromkeys([*rest, *decided, *later]))


def _with_declared(c: _Collector, touched: dict[str, _Touch], kept: list[str]) -> list[str]:
    """The list once the agent wrote out its patch for some paths (``git_evidence.declared_patch``)."""
    assert c.declared is not None
    _, raw_specs, cwd = c.declared
    specs = [p for s in raw_specs if (p := c.resolver.resolve(s.rstrip("/"), cwd)) is not None]
    if "." in raw_specs or "./" in raw_specs:  # the whole tree: no narrowing
        return kept
    inside = [p for p in kept if any(p == s or p.startswith(s + "/") for s in specs)]
    named_files = [
        s for s in specs if "." in s.rsplit("/", 1)[-1] and not any(p.startswith(s + "/") for p in kept)
    ]
    order = {p: i for i, p in enumerate(touched)}
    return sorted(dict.fromkeys([*inside, *named_files]), key=lambda p: order.get(p, len(order)))


def _settled_after(c: _Collector, at: int) -> bool:
    """Whether nothing touched a file after event ``at``: a ``git status`` that only looks, after the agent
    wrote out its patch, lists the scratch files it left (untracked) but changes nothing it declared."""
    return not any(index > at for index, _, _ in c.ops)


def _finish(c: _Collector, limits: Limits) -> FilesResult:
    touched = _replay(c.ops)
    weak = any(t.weak for t in touched.values())
    for at, command, output, exit_code, cwd in reversed(c.listings):
        if c.final_diff is not None and at <= c.final_diff[0]:
            break  # a full diff came later: it decides
        evidence = evidence_of(command, output, exit_code)
        if evidence is not None:
            c.evidence = (at, evidence, cwd)
            break
    named = _named(c) if weak or c.evidence is not None else set()
    kept = _kept(touched, named)
    authoritative = c.final_diff is not None
    last_word = max(c.final_diff[0] if c.final_diff else -1, c.evidence[0] if c.evidence else -1)
    if c.declared is not None and (c.declared[0] > last_word or _settled_after(c, c.declared[0])):
        kept = _with_declared(c, touched, kept)
    elif c.evidence is not None and (c.final_diff is None or c.evidence[0] > c.final_diff[0]):
        kept = _with_evidence(c, touched, kept, named)
    elif c.final_diff is not None:
        at, diffs = c.final_diff
        from_diff = [p for d in diffs if (p := c.resolver.resolve(d.path)) is not None]
        later_kept = _kept(_replay([op for op in c.ops if op[0] > at]), named)
        order = {p: i for i, p in enumerate(touched)}
        from_diff.sort(key=lambda p: order.get(p, len(order)))
        kept = list(dict.fromkeys([*from_diff, *later_kept]))
    return _symbols_of(c, kept[: limits.max_files], limits, authoritative=authoritative)


def _symbols_of(c: _Collector, files: list[str], limits: Limits, *, authoritative: bool) -> FilesResult:
    symbols: list[str] = []
    for path in files:
        for name in c.symbols.get(path, []):
            if name not in symbols and len(symbols) < limits.max_symbols:
                symbols.append(name)
    qualified = {name.rsplit(".", 1)[-1] for name in symbols if "." in name}
    symbols = [name for name in symbols if "." in name or name not in qualified]
    kept = set(files)
    at = [index for index, kind, path in c.ops if path in kept and kind not in {"revert", "stash", "unstash"}]
    scratch = [p for p, t in _replay(c.ops).items() if t.created and not t.alive]
    return FilesResult(
        files=files,
        symbols=symbols,
        authoritative_diff=authoritative,
        edit_span=(min(at), max(at)) if at else None,
        scratch=scratch,
    )
