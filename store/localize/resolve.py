"""From a task text to the files of the checkout it is likely about, with how sure and why. Pure.

The text names code in five ways, each looked up in a ``CheckoutIndex`` (dict lookups only):

- *frames* — ``File "x.py", line 3``, ``x.go:12``, ``src/x.rs:3:5``, ``at f (x.ts:1:2)``: a file, almost
  surely the one to look at;
- *paths* — ``crates/uv/src/lib.rs``, ``checker.py``: suffix-matched against the checkout's files
  through the basename map (a file name many directories hold says little);
- *dotted paths* — ``mypy.checker`` (a module: ``mypy/checker.py``), ``Class.method``,
  ``cache.Package`` (a name qualified by its package directory);
- *identifiers* — code spans, ``snake_case``, ``CamelCase``, ``call()``: the files defining the name;
- *literal strings* — error messages and quoted text, matched against the literals the files hold.

Each match is *evidence* for a file with a score in (0, 1): the kind's base score divided among the
files it points to, so a name defined in one file counts fully and one defined in many means little
(past ``max_files`` it is dropped). A file's weight is the noisy-or of its evidence; files under
``min_weight`` are not returned, so a text that names nothing resolvable gets ``()``.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from store.localize.index import CheckoutIndex

_EXT = r"(?:py|pyi|rs|go|ts|tsx|js|jsx|mjs|cjs|mts|cts|json|toml|yaml|yml|md|html|css|scss|proto|sh|lock|mod)"
_PY_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)')
_LINE_FRAME = re.compile(rf"((?:[\w.@~-]+/)*[\w.@-]+\.{_EXT}):(\d+)(?::\d+)?\b")
_PATH = re.compile(rf"(?<![\w/.@-])((?:[\w.@~-]+/)*[\w@-][\w.@-]*\.{_EXT})(?![\w/-])")
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`")
_DOTTED = re.compile(r"(?<![\w.$])([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+)(?![\w$])")
_IDENT = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*)(?![\w$])")
_CALL = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]*)\(")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_WORD_CHAR = re.compile(r"[a-z0-9_]+")
_MODULE_EXTS = (".py", ".pyi", "/__init__.py", ".rs", "/mod.rs", ".go", ".ts", ".js")
MAX_TOKENS = 400


@dataclass(frozen=True, slots=True)
class Localized:
    """A file the task is likely about: ``weight`` in (0, 1] says how sure, ``why`` in a few words."""

    path: str
    weight: float
    why: str


@dataclass(frozen=True, slots=True)
class LocalizeWeights:
    """The base score of each kind of evidence, the rarity cut and the abstention floor."""

    frame: float = 0.95
    path: float = 0.85
    file_name: float = 0.7
    module: float = 0.75
    qualified: float = 0.8
    name: float = 0.6
    plain_name: float = 0.45
    folded_case: float = 0.6
    string: float = 0.75
    string_full_chars: int = 40
    max_files: int = 4
    min_weight: float = 0.5


DEFAULT_WEIGHTS = LocalizeWeights()


@dataclass(frozen=True, slots=True)
class Evidence:
    """One reason to look at ``path``: its score in (0, 1) and what to tell the user."""

    path: str
    score: float
    why: str


def localize(
    text: str, index: CheckoutIndex, *, limit: int = 5, weights: LocalizeWeights = DEFAULT_WEIGHTS
) -> tuple[Localized, ...]:
    """The files of ``index`` that ``text`` is most likely about, best first; () when unsure."""
    by_file: defaultdict[str, list[Evidence]] = defaultdict(list)
    for ev in evidence(text, index, weights):
        by_file[ev.path].append(ev)
    ranked: list[Localized] = []
    for path, found in by_file.items():
        miss = 1.0
        for ev in found:
            miss *= 1.0 - ev.score
        weight = round(1.0 - miss, 4)
        if weight >= weights.min_weight:
            best = max(found, key=lambda ev: ev.score)
            more = len(found) - 1
            why = best.why + (f" (and {more} more clue{'s' * (more > 1)})" if more else "")
            ranked.append(Localized(path=path, weight=min(weight, 1.0), why=why))
    ranked.sort(key=lambda loc: (-loc.weight, loc.path))
    return tuple(ranked[:limit])


def evidence(
    text: str, index: CheckoutIndex, weights: LocalizeWeights = DEFAULT_WEIGHTS
) -> Iterator[Evidence]:
    """Every piece of evidence ``text`` gives for a file of ``index`` (one per token and file)."""
    yield from _frames(text, index, weights)
    yield from _paths(text, index, weights)
    yield from _names(text, index, weights)
    yield from _strings(text, index, weights)


def resolve_path(token: str, index: CheckoutIndex) -> tuple[str, ...]:
    """The files of ``index`` whose path ends with ``token`` (at a ``/``), through the basename map."""
    token = token.strip().lstrip("./~").replace("\\", "/")
    if not token:
        return ()
    name = token.rsplit("/", 1)[-1].lower()
    candidates = index.by_basename.get(name, ())
    if "/" not in token:
        return candidates
    suffix = "/" + token.lower()
    exact = tuple(p for p in candidates if ("/" + p.lower()).endswith(suffix))
    if exact:
        return exact
    # an absolute path (a traceback's /home/x/repo/src/a.py): the longest tail the checkout holds
    parts = token.lower().split("/")
    for start in range(1, len(parts) - 1):
        tail = "/" + "/".join(parts[start:])
        found = tuple(p for p in candidates if ("/" + p.lower()).endswith(tail))
        if found:
            return found
    return ()


def _spread(paths: tuple[str, ...], base: float, why: str, weights: LocalizeWeights) -> Iterator[Evidence]:
    if not paths or len(paths) > weights.max_files:
        return
    score = base / len(paths)
    others = f" (one of {len(paths)} files)" if len(paths) > 1 else ""
    for path in paths:
        yield Evidence(path=path, score=score, why=why + others)


def _frames(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Evidence]:
    seen: set[str] = set()
    for pattern in (_PY_FRAME, _LINE_FRAME):
        for match in pattern.finditer(text):
            token, line = match.group(1), match.group(2)
            if token in seen:
                continue
            seen.add(token)
            why = f"a traceback or location in the task points here ({token}:{line})"
            yield from _spread(resolve_path(token, index), weights.frame, why, weights)


def _paths(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Evidence]:
    seen: set[str] = set()
    for match in _PATH.finditer(text):
        token = match.group(1).rstrip(".")
        if token in seen or _LINE_FRAME.match(text, match.start()):
            continue
        seen.add(token)
        base = weights.path if "/" in token else weights.file_name
        yield from _spread(resolve_path(token, index), base, f"the task names the file `{token}`", weights)


def _name_tokens(text: str) -> dict[str, bool]:
    """Identifier-shaped tokens of ``text`` → whether the text marks them as code (a span or a call)."""
    tokens: dict[str, bool] = {}
    for span in _CODE_SPAN.findall(text):
        for ident in _DOTTED.findall(span) + _IDENT.findall(span):
            tokens[ident] = True
    for ident in _CALL.findall(text):
        tokens[ident] = True
    for ident in _DOTTED.findall(text):
        if not re.fullmatch(rf".*\.{_EXT}", ident):
            tokens.setdefault(ident, False)
    for ident in _IDENT.findall(text):
        if "_" in ident.strip("_") or _CAMEL.search(ident):
            tokens.setdefault(ident, False)
        if len(tokens) >= MAX_TOKENS:
            break
    return tokens


def _names(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Evidence]:
    for token, marked in _name_tokens(text).items():
        if "." in token or "::" in token:
            yield from _dotted(token, index, weights)
        elif len(token) >= 3:
            base = weights.name if marked or "_" in token or _CAMEL.search(token) else weights.plain_name
            yield from _defined(token, base, index, weights)


def _defined(name: str, base: float, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Evidence]:
    paths = index.defs.get(name)
    why = f"the task names `{name}`, defined here"
    if paths is None:
        folded = index.by_lower.get(name.lower(), ())
        if len(folded) != 1:
            return
        paths, base = index.defs[folded[0]], base * weights.folded_case
        why = f"the task names `{name}`, defined here as `{folded[0]}`"
    yield from _spread(paths, base, why, weights)


def _dotted(token: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Evidence]:
    parts = [p for p in re.split(r"\.|::", token) if p]
    module = "/".join(parts)
    for ext in _MODULE_EXTS:
        found = resolve_path(module + ext, index)
        if found:
            yield from _spread(found, weights.module, f"the task names the module `{token}`", weights)
            break
    for first, second in itertools.pairwise(parts):
        pair = f"{first}.{second}"
        if pair in index.defs:
            yield from _spread(
                index.defs[pair], weights.qualified, f"the task names `{pair}`, defined here", weights
            )
        elif second in index.defs and len(second) >= 3:
            # `cache.Package`: prefer the files under a directory called like the qualifier
            defining = index.defs[second]
            under = tuple(p for p in defining if f"/{first.lower()}/" in "/" + p.lower())
            why = f"the task names `{first}.{second}`, defined here"
            yield from _spread(under or defining, weights.qualified if under else weights.name, why, weights)


def _strings(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Evidence]:
    words = _WORD_CHAR.findall(text.lower())
    if len(words) < 2 or not index.string_keys:
        return
    joined = " ".join(words)
    offsets, at = [], 0
    for word in words:
        offsets.append(at)
        at += len(word) + 1
    seen: set[str] = set()
    for i in range(len(words) - 1):
        for literal in index.string_keys.get((words[i], words[i + 1]), ()):
            if literal in seen or not joined.startswith(literal, offsets[i]):
                continue
            end = offsets[i] + len(literal)
            if end < len(joined) and joined[end] != " ":
                continue
            seen.add(literal)
            base = weights.string * min(1.0, len(literal) / weights.string_full_chars)
            quoted = literal if len(literal) <= 60 else literal[:57] + "..."
            yield from _spread(
                index.strings[literal], base, f'the task quotes "{quoted}", a string here', weights
            )


__all__ = [
    "DEFAULT_WEIGHTS",
    "Evidence",
    "LocalizeWeights",
    "Localized",
    "evidence",
    "localize",
    "resolve_path",
]
