"""The change summary: what a fix changed, one short line per changed function or class.

Pure. Reads the turn's structured edits (old/new text), diffs (patch tools, ``diff`` fields, the output of
a full ``git diff``) and the edits scripts make without a diff (``sed -i 's/a/b/'``, a Python script's
``text.replace("a", "b")`` on the one file it writes). Rules:

- only files of the entry's final list count (scratch files and reverted files are already gone from it);
- the last full ``git diff`` (or SWE-agent ``submit``) is the truth for the files it shows, plus the edits
  made after it; other files are summed over all their edits;
- per file, lines are grouped by the innermost definition they sit in (``symbols.changed_lines``);
- each group gives one line ``file · symbol: removed → added``: the removed/added pair most alike
  (``difflib`` ratio >= 0.5) weighted by how informative the lines are (identifiers and operators count;
  comments, blank lines, brackets, ``pass`` and imports count little), else the most informative added
  line (``+ …``), else the removed one (``- …``);
- lines removed and added again (moved, or only reformatted: spaces, quotes, a trailing comma) are no
  change; whitespace is collapsed, identical bracket contents are elided to ``[...]`` until a side fits
  ``MAX_SIDE_CHARS``, then the side is cut with "…";
- groups are taken round-robin over files (each file's first group, then each file's second…), source
  files before test files, at most ``MAX_CHANGES`` lines, each redacted (``store.redact``).
"""

from __future__ import annotations

import ast
import difflib
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ingest.schema import ToolEvent
from workers.extraction.calls import Call, classify
from workers.extraction.diffs import DiffFile, looks_like_patch, parse_patch
from workers.extraction.files import edit_texts
from workers.extraction.limits import Limits, clip
from workers.extraction.paths import PathResolver
from workers.extraction.pyscript import python_file_effects
from workers.extraction.shell import parse_commands
from workers.extraction.shell_writes import sed_files
from workers.extraction.similarity import quick_ratio, real_quick_ratio
from workers.extraction.similarity import ratio as similarity_ratio
from workers.extraction.solution import redact_each
from workers.extraction.symbols import changed_lines, symbols_from_edit
from workers.extraction.tools import Family, path_of, strings_of

MAX_CHANGES = 5  # lines stored per entry
MAX_SIDE_CHARS = 80  # of a removed or an added line, after elision
MAX_LINE_CHARS = 220  # of a whole change line
SHARED_BRACKET_CHARS = 16  # a bracket group alike on both sides of a pair and this long is elided
ARROW = " → "
_PAIR_RATIO = 0.5
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|==|!=|<=|>=|->|=>|&&|\|\||[-+*/%<>=!&|^~]")
_COMMENT = re.compile(r"^(?:#|//|/\*|\*|--|;)")
_DULL = re.compile(r"^(?:pass|return|else:?|try:|finally:|\}?\s*else\s*\{?|break|continue|[\])}{(\[,;:]+)$")
_IMPORT = re.compile(r"^(?:import|from\s+\S+\s+import|#include|using|require|use)\b")
_GROUP = re.compile(r"\[[^\[\]]{4,}\]|\([^()]{4,}\)|\{[^{}]{4,}\}")
_SPACES = re.compile(r"\s+")
_SED_COMMANDS = re.compile(r";\s*|\n")
_SED_ADDRESS = re.compile(r"^[\d,$/\\^.*\[\]a-z]*?(?=s(.))")
_TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|spec|__tests__)/|(?:^|/)test_[^/]*$|_test\.\w+$|\.(?:test|spec)\.\w+$"
)


@dataclass
class _Lines:
    """Changed lines of one file, in order: ``(event index, definition, tag, text)``."""

    items: list[tuple[int, str, str, str]] = field(default_factory=list)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _canonical(line: str) -> str:
    """A line without its formatting: no spaces, one kind of quote, no trailing comma."""
    return _SPACES.sub("", line).replace("'", '"').rstrip(",;")


def informative(line: str) -> float:
    """How much a (flattened) code line says: its distinct tokens, little for comments, imports, brackets."""
    if not line or _DULL.match(line):
        return 0.0
    tokens = set(_TOKEN.findall(line))
    score = float(min(len(tokens), 12))
    if _COMMENT.match(line) or line.startswith(('"""', "'''")):
        score *= 0.3
    elif _IMPORT.match(line):
        score *= 0.4
    return score


def _edit_lines(old: str, new: str) -> list[tuple[str, str]]:
    """The ``(tag, line)`` pairs an old→new replacement changes (difflib over lines)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if set(old_lines).isdisjoint(new_lines):  # no line in common: difflib's one replace, without it
        return [*(("-", line) for line in old_lines), *(("+", line) for line in new_lines)]
    out: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        out.extend(("-", line) for line in old_lines[i1:i2])
        out.extend(("+", line) for line in new_lines[j1:j2])
    return out


def _sed_pairs(args: list[str]) -> list[tuple[str, str]]:
    """``(pattern, replacement)`` of each ``s`` command of a sed script (``s/a/b/g``, any delimiter)."""
    scripts: list[str] = []
    for i, arg in enumerate(args):
        if arg in {"-e", "--expression"} and i + 1 < len(args):
            scripts.append(args[i + 1])
        elif arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
    if not scripts:
        scripts = [a for a in args if not a.startswith("-")][:1]
    pairs: list[tuple[str, str]] = []
    for script in scripts:
        for piece in _SED_COMMANDS.split(script):
            part = _SED_ADDRESS.sub("", piece.strip(), count=1)  # an address
            if len(part) < 4 or part[0] != "s" or part[1].isalnum() or part[1].isspace():
                continue
            pieces = re.split(r"(?<!\\)" + re.escape(part[1]), part[2:])
            if len(pieces) >= 2:
                pairs.append(tuple(p.replace("\\" + part[1], part[1]) for p in pieces[:2]))  # type: ignore[arg-type]
    return pairs


def _replace_pairs(code: str) -> list[tuple[str, str]]:
    """``(old, new)`` of each ``x.replace("old", "new")`` with string literals in a Python script."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return []
    pairs: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "replace"
            and len(node.args) >= 2
        ):
            first, second = node.args[0], node.args[1]
            if (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and isinstance(second, ast.Constant)
                and isinstance(second.value, str)
                and first.value != second.value
            ):
                pairs.append((first.value, second.value))
    return pairs


# A shell command that can show or make a change holds one of these (a cheap first test).
_SHELL_WORDS = ("diff", "submit", "sed", "python", "pypy")
_SKILL_EDITS = {"edit_file_by_replace": ("to_replace", "new_content")}  # OpenHands' IPython agent skills


def _skill_edits(code: str) -> list[tuple[str, str, str]]:
    """``(path, old, new)`` of each ``edit_file_by_replace(path, to_replace=…, new_content=…)`` call."""
    if "edit_file_by_replace" not in code:
        return []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return []
    found: list[tuple[str, str, str]] = []
    for node in ast.walk(tree):
        if (
            not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name))
            or node.func.id not in _SKILL_EDITS
        ):
            continue
        old_key, new_key = _SKILL_EDITS[node.func.id]
        values = {k.arg: k.value for k in node.keywords if k.arg}
        path = node.args[0] if node.args else values.get("file_name")
        old, new = values.get(old_key), values.get(new_key)
        texts = [
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
            for v in (path, old, new)
        ]
        if all(t is not None for t in texts):
            found.append((texts[0], texts[1], texts[2]))  # type: ignore[arg-type]
    return found


class _Walk:
    """Changed lines per resolved path, and the last full diff's lines (with its event index)."""

    def __init__(self, resolver: PathResolver, limits: Limits) -> None:
        self.resolver = resolver
        self.limits = limits
        self.lines: dict[str, _Lines] = {}
        self.final: tuple[int, dict[str, _Lines]] | None = None

    def add(
        self, index: int, raw_path: str, symbol: str, pairs: Iterable[tuple[str, str]], cwd: str | None = None
    ) -> None:
        path = self.resolver.resolve(raw_path, cwd)
        if path is None:
            return
        bucket = self.lines.setdefault(path, _Lines())
        bucket.items.extend((index, symbol, tag, text) for tag, text in pairs)

    def diffs(self, index: int, diffs: Sequence[DiffFile], into: dict[str, _Lines] | None = None) -> None:
        for diff in diffs:
            path = self.resolver.resolve(diff.path)
            if path is None:
                continue
            target = self.lines if into is None else into
            bucket = target.setdefault(path, _Lines())
            bucket.items.extend(
                (index, name, tag, text) for name, tag, text in changed_lines(diff.path, diff.hunks)
            )


def _structured(walk: _Walk, call: Call, family: Family) -> None:
    index, event = call.index, call.event
    raw_path = path_of(event.input)
    if raw_path is None or call.failed():
        return
    limit = walk.limits.max_input_chars
    own_diff = parse_patch(clip(event.diff, limit)) if event.diff else []
    if own_diff:  # the tool's own diff of the edit: hunks with their enclosing definitions
        walk.diffs(index, own_diff)
        return
    for old_text, new_text in edit_texts(event.input):
        old = clip(old_text, limit) if family is Family.EDIT else ""
        new = clip(new_text, limit)
        if old == new:
            continue
        names = call.edit_symbols(raw_path, old, new)  # files asked the same: made once
        walk.add(index, raw_path, names[0] if names else "", _edit_lines(old, new))


def _script_edits(walk: _Walk, index: int, code: str, cwd: str | None) -> None:
    written = [path for kind, path in python_file_effects(code) if kind in {"write", "create", "output"}]
    if len(set(written)) == 1:
        pairs = _replace_pairs(code)
        walk.add(
            index, written[0], "", [(t, x) for old, new in pairs for t, x in (("-", old), ("+", new))], cwd
        )


def _shell(walk: _Walk, call: Call, cwd: str | None) -> None:
    index, event = call.index, call.event
    command = call.command or call.tool
    if event.exit_code in {126, 127} or not any(word in command for word in _SHELL_WORDS):
        return
    diffs = call.full_diff()  # files parsed it already
    if diffs:
        final: dict[str, _Lines] = {}
        walk.diffs(index, diffs, into=final)
        walk.final = (index, final)
        return
    if event.exit_code not in {None, 0}:
        return
    for cmd in parse_commands(command):
        argv = list(cmd.words)
        program = argv[0].rsplit("/", 1)[-1] if argv else ""
        if program in {"sed", "gsed"}:
            pairs = _sed_pairs(argv[1:])
            for target in sed_files(argv[1:]):
                walk.add(
                    index,
                    target,
                    "",
                    [(t, x) for old, new in pairs for t, x in (("-", old), ("+", new))],
                    cwd,
                )
        elif program.startswith("python") and cmd.stdin:
            _script_edits(walk, index, cmd.stdin, cwd)
        elif program.startswith("python") and "-c" in argv[:-1]:
            _script_edits(walk, index, argv[argv.index("-c") + 1], cwd)


def _collect(calls: Sequence[Call], resolver: PathResolver, limits: Limits) -> _Walk:
    walk = _Walk(resolver, limits)
    for call in calls:
        index, event, family = call.index, call.event, call.family
        if family is Family.READ:
            continue
        if call.shell_like:
            _shell(walk, call, resolver.workspace or None)
        elif family in {Family.EDIT, Family.WRITE}:
            _structured(walk, call, family)
        elif family is Family.PATCH and not call.failed():
            for text in strings_of(event.input, limits.max_input_chars):
                if looks_like_patch(text):
                    walk.diffs(index, parse_patch(text))
        elif family is Family.PYTHON and not call.failed():
            code = event.input.get("code", event.input.get("command", ""))
            if isinstance(code, str):
                code = clip(code, limits.max_input_chars)
                _script_edits(walk, index, code, resolver.workspace or None)
                for path, old, new in _skill_edits(code):
                    names = symbols_from_edit(path, old, new, event.output[:20_000])
                    walk.add(index, path, names[0] if names else "", _edit_lines(old, new))
        if event.diff and family not in {Family.PATCH, Family.EDIT, Family.WRITE}:  # those read theirs above
            walk.diffs(index, parse_patch(clip(event.diff, limits.max_input_chars)))
    return walk


def _elide(text: str, keep: set[str] | None, limit: int) -> str:
    """``text`` cut to ``limit``. Bracket contents alike on both sides of a pair (``keep``) say nothing
    about the change: those of ``SHARED_BRACKET_CHARS`` or more are shown as ``...`` always. Then, while
    too long, the longest bracket contents (of ``keep``; any when ``keep`` is None) are elided, and last
    the text is cut with "…"."""
    for group in sorted(keep or (), key=len, reverse=True):
        if len(group) >= SHARED_BRACKET_CHARS and group in text:
            text = text.replace(group, group[0] + "..." + group[-1])
    while len(text) > limit:
        groups = [m for m in _GROUP.finditer(text) if keep is None or m.group(0) in keep]
        if not groups:
            break
        longest = max(groups, key=lambda m: len(m.group(0)))
        text = text[: longest.start() + 1] + "..." + text[longest.end() - 1 :]
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _brackets(text: str) -> set[str]:
    """Every balanced bracket group of ``text`` (``[…]``, ``(…)``, ``{…}``, nested ones too)."""
    found: set[str] = set()
    opened: list[tuple[str, int]] = []
    pairs = {"]": "[", ")": "(", "}": "{"}
    for i, char in enumerate(text):
        if char in "[({":
            opened.append((char, i))
        elif char in pairs:
            if opened and opened[-1][0] == pairs[char]:
                found.add(text[opened.pop()[1] : i + 1])
            else:
                opened.clear()  # unbalanced (a cut line): start over
    return found


def describe(removed: Sequence[str], added: Sequence[str]) -> str:
    """One group's change: ``old → new``, ``+ new`` or ``- old`` (flattened, elided, cut); "" for none."""
    removed = [x for x in dict.fromkeys(_flat(r) for r in removed) if x]
    added = [x for x in dict.fromkeys(_flat(a) for a in added) if x]
    moved = {_canonical(x) for x in removed} & {_canonical(x) for x in added}  # moved or only reformatted
    removed = [r for r in removed if _canonical(r) not in moved]
    added = [a for a in added if _canonical(a) not in moved]
    best: tuple[float, str, str] | None = None
    for old in removed[:40]:
        for new in added[:40]:
            # difflib's ratios (``similarity``); the quick ones are upper bounds of ``ratio``: a pair they
            # rule out is never computed
            if real_quick_ratio(old, new) < _PAIR_RATIO or quick_ratio(old, new) < _PAIR_RATIO:
                continue
            ratio = similarity_ratio(old, new)
            if ratio >= _PAIR_RATIO:
                score = ratio * (informative(old) + informative(new))
                if score > 0 and (best is None or score > best[0]):
                    best = (score, old, new)
    if best is not None:
        _, old, new = best
        both = _brackets(old) & _brackets(new)
        return _elide(old, both, MAX_SIDE_CHARS) + ARROW + _elide(new, both, MAX_SIDE_CHARS)
    for tag, lines in (("+ ", added), ("- ", removed)):
        ranked = sorted(lines, key=informative, reverse=True)
        if ranked and informative(ranked[0]) > 0:
            return tag + _elide(ranked[0], None, MAX_SIDE_CHARS)
    return ""


def _groups(lines: _Lines) -> list[tuple[str, list[str], list[str]]]:
    grouped: dict[str, tuple[list[str], list[str]]] = {}
    for _, name, tag, text in lines.items:
        removed, added = grouped.setdefault(name, ([], []))
        (added if tag == "+" else removed).append(text)
    return [(name, removed, added) for name, (removed, added) in grouped.items()]


def summarize_changes(
    events: Sequence[ToolEvent],
    resolver: PathResolver,
    files: Sequence[str],
    limits: Limits = Limits(),  # noqa: B008
    *,
    max_changes: int = MAX_CHANGES,
    calls: Sequence[Call] | None = None,
) -> list[str]:
    """Up to ``max_changes`` lines ``file · symbol: old → new`` for the entry's ``files`` (rules above);
    ``calls``: the events' ``calls.classify`` when the caller has it."""
    walk = _collect(calls if calls is not None else classify(events, limits), resolver, limits)
    per_file: list[list[str]] = []
    ordered = sorted(files, key=lambda p: bool(_TEST_PATH.search(p)))
    for path in ordered:
        lines = walk.lines.get(path, _Lines())
        if walk.final is not None and path in walk.final[1]:
            at = walk.final[0]
            lines = _Lines([*walk.final[1][path].items, *(i for i in lines.items if i[0] > at)])
        rendered: list[str] = []
        for name, removed, added in _groups(lines):
            text = describe(removed, added)
            if text:
                head = posixpath.basename(path) + (f" · {name}" if name else "")
                line = f"{head}: {text}"
                rendered.append(line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…")
        per_file.append(list(dict.fromkeys(rendered)))
    out: list[str] = []
    depth = 0
    while len(out) < max_changes and any(depth < len(r) for r in per_file):
        out.extend(r[depth] for r in per_file if depth < len(r))
        depth += 1
    return redact_each(out[:max_changes])
