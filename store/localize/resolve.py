"""From a task text to the files of the checkout it is likely about, with how sure and why. Pure.

The text names code in five ways, each looked up in a ``CheckoutIndex`` (dict lookups only):

- *frames* — ``File "x.py", line 3``, ``x.go:12``, ``src/x.rs:3:5``, ``at f (x.ts:1:2)``: a file, almost
  surely the one to look at;
- *paths* — ``crates/uv/src/lib.rs``, ``checker.py``: suffix-matched against the checkout's files
  through the basename map (a file name many directories hold says little);
- *dotted paths* — ``mypy.checker`` (a module: ``mypy/checker.py``), ``Class.method``,
  ``cache.Package`` (a name qualified by its package directory);
- *identifiers* — code spans, ``snake_case``, ``CamelCase``, ``call()``: the files defining the name;
  *flags* (``--cache-map``): the files declaring them;
- *literal strings* — error messages and quoted text, matched against the literals the files hold.

Each match is *evidence* for a file with a score in (0, 1): the kind's base score divided among the
files it points to, so a name defined in one file counts fully and one defined in many means little
(past ``max_files`` it is dropped). With a *history prior* (``touched``: the files past fixes touched), a
file past fixes never touched takes only ``untouched`` of a share when the score is divided, and a name
defined in many files still counts when at most ``max_files`` of them were touched. A file's weight is
the noisy-or of its evidence, and of a bonus when the title's own clues point at it (the title says what
the task is about); files under ``min_weight`` are not returned, so a text that names nothing
resolvable gets ``()``.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from store.localize.index import CheckoutIndex, stem_key

_EXT = r"(?:py|pyi|rs|go|ts|tsx|js|jsx|mjs|cjs|mts|cts|json|toml|yaml|yml|md|html|css|scss|proto|sh|lock|mod)"
_PY_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)')
_LINE_FRAME = re.compile(rf"((?:[\w.@~-]+/)*[\w.@-]+\.{_EXT}):(\d+)(?::\d+)?\b")
_PATH = re.compile(rf"(?<![\w/.@-])((?:[\w.@~-]+/)*[\w@-][\w.@-]*\.{_EXT})(?![\w/-])")
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`")
_DOTTED = re.compile(r"(?<![\w.$])([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+)(?![\w$])")
_IDENT = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*)(?![\w$])")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
_CALL = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]*)\(")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_WORD_CHAR = re.compile(r"[a-z0-9_]+")
_MODULE_EXTS = (".py", ".pyi", "/__init__.py", ".rs", "/mod.rs", ".go", ".ts", ".js")
MAX_TOKENS = 400
MAX_SCOPE_DIRS = 3
MIN_STEM_CHARS = 4
# A word names a file by its stem only if the file is source code (not ``make.bat``, ``mypy.xsd``).
_STEM_SUFFIXES = (".py", ".pyi", ".rs", ".go", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_TAGGED = re.compile(r"^\[([\w./@-]+)\]")  # [mypyc] …
_CONVENTIONAL = re.compile(r"^\w+\(([\w./@, -]+)\)!?:")  # fix(@angular/build): …
_PREFIXED = re.compile(r"^([\w.-]+(?:/[\w.-]+)*(?:, ?[\w.-]+(?:/[\w.-]+)*)*):\s")  # gopls/internal/golang: …
_STEM_WORD = re.compile(r"[A-Za-z][\w-]*[A-Za-z0-9]")
# CamelCase words of prose, not names: they are defined somewhere, and say nothing of where the fix goes.
_PROSE = frozenset(
    [
        "github",
        "gitlab",
        "macos",
        "ios",
        "javascript",
        "typescript",
        "webassembly",
        "pypi",
        "npm",
        "linux",
        "windows",
    ]
)
# Directories of copies, stubs and test data: a name defined there is rarely where a task's fix goes.
_ASIDE_DIRS = "typeshed vendor vendored third_party node_modules testdata test-data fixtures __fixtures__"
ASIDE = frozenset(_ASIDE_DIRS.split())


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
    title: float = 0.3  # a file the title's own clues point at gains this much (noisy-or)
    flag: float = 0.3  # a command-line flag (``--cache-map``): where it is declared, seldom where the fix is
    plain_name: float = 0.3  # a lower-case word without ``_`` (``types``, ``parser``): a weak clue alone
    folded_case: float = 0.6
    string: float = 0.75
    string_full_chars: int = 40
    max_files: int = 4
    outside: float = 0.4  # evidence outside the component the title names (``component``) counts this much
    stem: float = 0.6  # a word equal to a file's stem, in the component or code-shaped
    aside: float = 0.5  # a file under vendored, stub or test-data directories (``ASIDE``) counts this much
    min_weight: float = 0.5  # set on evals/related's tuning half with the recall knobs
    untouched: float = 1.0  # with a history prior, a file no past fix touched takes this much of a share


DEFAULT_WEIGHTS = LocalizeWeights()


@dataclass(frozen=True, slots=True)
class Clue:
    """What one token of the text points at: files, the kind's base score, and the reason."""

    paths: tuple[str, ...]
    base: float
    why: str


@dataclass(frozen=True, slots=True)
class Evidence:
    """One reason to look at ``path``: its score in (0, 1) and what to tell the user."""

    path: str
    score: float
    why: str


def localize(
    text: str,
    index: CheckoutIndex,
    *,
    limit: int = 5,
    weights: LocalizeWeights = DEFAULT_WEIGHTS,
    touched: Collection[str] | None = None,
) -> tuple[Localized, ...]:
    """The files of ``index`` that ``text`` is most likely about, best first; () when unsure.
    ``touched``: the history prior, the checkout's files past fixes touched (None: no prior)."""
    by_file: defaultdict[str, list[Evidence]] = defaultdict(list)
    for ev in evidence(text, index, weights, touched):
        by_file[ev.path].append(ev)
    title = text.lstrip().split("\n", 1)[0]
    titled = (
        {ev.path for ev in evidence(title, index, weights, touched)}
        if weights.title and title != text
        else set()
    )
    ranked: list[Localized] = []
    for path, found in by_file.items():
        miss = 1.0 - weights.title if path in titled else 1.0  # what the title names counts more
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
    text: str,
    index: CheckoutIndex,
    weights: LocalizeWeights = DEFAULT_WEIGHTS,
    touched: Collection[str] | None = None,
) -> Iterator[Evidence]:
    """Every piece of evidence ``text`` gives for a file of ``index`` (one per token and file), under the
    history prior ``touched`` when given (module docstring)."""
    scope = component(text, index)
    for clues in (
        _frames(text, index, weights),
        _paths(text, index, weights),
        _names(text, index, weights),
        _strings(text, index, weights),
        _stems(text, index, scope, weights),
    ):
        for clue in clues:
            yield from _spread(clue, scope, weights, touched)


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


def _spread(
    clue: Clue, scope: tuple[str, ...], weights: LocalizeWeights, touched: Collection[str] | None = None
) -> Iterator[Evidence]:
    """The clue's base score divided among its files (none past ``max_files``, narrowed to the task's
    component when it names one and some are in it), discounted outside the component and in ``ASIDE``.
    Under a history prior, a file in ``touched`` takes a whole share and another ``untouched`` of one,
    and past ``max_files`` only the touched files count (when at most ``max_files`` were)."""
    paths, why = clue.paths, clue.why
    inside = tuple(p for p in paths if _within(p, scope)) if scope else ()
    if inside and len(inside) < len(paths):
        paths, why = inside, why + " (in the component the task names)"
    share = {p: 1.0 if touched is None or p in touched else weights.untouched for p in paths}
    total = sum(share.values())
    if len(share) > weights.max_files and touched is not None:  # a common name: the files fixes touched
        share = {p: 1.0 for p in paths if p in touched}
    if not share or len(share) > weights.max_files or total <= 0:
        return
    others = f" (one of {len(paths)} files)" if len(paths) > 1 else ""
    for path, part in share.items():
        factor = weights.aside if not ASIDE.isdisjoint(path.split("/")[:-1]) else 1.0
        if scope and not inside:
            factor *= weights.outside
        if part > 0:
            yield Evidence(path=path, score=clue.base * part / total * factor, why=why + others)


def _within(path: str, scope: tuple[str, ...]) -> bool:
    return any(path.startswith(d + "/") for d in scope)


def component(text: str, index: CheckoutIndex) -> tuple[str, ...]:
    """The directories the task's title names as its component (``gopls/internal/golang: …``,
    ``fix(@angular/build): …``, ``[mypyc] …``), when each resolves to at most ``MAX_SCOPE_DIRS``."""
    title = text.lstrip().split("\n", 1)[0]
    match = _TAGGED.match(title) or _CONVENTIONAL.match(title) or _PREFIXED.match(title)
    if match is None:
        return ()
    dirs: list[str] = []
    for part in match.group(1).split(","):
        name = part.strip().strip("@/").lower()
        if not name:
            continue
        found = [
            d
            for d in index.by_dirname.get(name.rsplit("/", 1)[-1], ())
            if d.lower() == name or ("/" in name and d.lower().endswith("/" + name))
        ]
        if 0 < len(found) <= MAX_SCOPE_DIRS:
            dirs.extend(found)
    return tuple(dirs)


def _stems(
    text: str, index: CheckoutIndex, scope: tuple[str, ...], weights: LocalizeWeights
) -> Iterator[Clue]:
    """Words equal to a source file's stem (``stringsseq`` → ``stringsseq.go``): a word of the title
    within the component it names, a code-shaped or hyphenated word anywhere."""
    code = {stem_key(t) for t in _name_tokens(text)}
    title = text.lstrip().split("\n", 1)[0]
    named = {stem_key(part) for d in scope for part in d.split("/")}
    title_words = len(_STEM_WORD.findall(title))
    seen: set[str] = set()
    for at, word in enumerate(_STEM_WORD.findall(text)):
        key = stem_key(word)
        if len(key) < MIN_STEM_CHARS or key in seen or key in _PROSE:
            continue
        seen.add(key)
        paths = tuple(p for p in index.by_stem.get(key, ()) if p.endswith(_STEM_SUFFIXES))
        if scope and at < title_words:
            inside = tuple(p for p in paths if _within(p, scope))
            if inside:  # the component's own name (``modernize/modernize.go``) is a weaker clue
                base = weights.stem / 2 if key in named else weights.stem
                yield Clue(inside, base, f"the title names `{word}`, this file in its component")
                continue
        if key in code or "-" in word:
            yield Clue(paths, weights.stem, f"the task names `{word}`, this file's name")


def _frames(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Clue]:
    seen: set[str] = set()
    for pattern in (_PY_FRAME, _LINE_FRAME):
        for match in pattern.finditer(text):
            token, line = match.group(1), match.group(2)
            if token in seen:
                continue
            seen.add(token)
            why = f"a traceback or location in the task points here ({token}:{line})"
            yield Clue(resolve_path(token, index), weights.frame, why)


def _paths(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Clue]:
    seen: set[str] = set()
    for match in _PATH.finditer(text):
        token = match.group(1).rstrip(".")
        if token in seen or _LINE_FRAME.match(text, match.start()):
            continue
        seen.add(token)
        base = weights.path if "/" in token else weights.file_name
        yield Clue(resolve_path(token, index), base, f"the task names the file `{token}`")


def _name_tokens(text: str) -> dict[str, None]:
    """Identifier-shaped tokens of ``text``, first seen first: code spans' and calls' names, dotted
    paths, and ``snake_case`` or ``CamelCase`` words."""
    tokens: dict[str, None] = {}
    for span in _CODE_SPAN.findall(text):
        tokens.update(dict.fromkeys(_DOTTED.findall(span) + _IDENT.findall(span)))
    tokens.update(dict.fromkeys(_CALL.findall(text)))
    tokens.update(dict.fromkeys(d for d in _DOTTED.findall(text) if not re.fullmatch(rf".*\.{_EXT}", d)))
    for ident in _IDENT.findall(text):
        if len(tokens) >= MAX_TOKENS:
            break
        if "_" in ident.strip("_") or _CAMEL.search(ident):
            tokens[ident] = None
    return tokens


def _names(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Clue]:
    for flag in dict.fromkeys(_FLAG.findall(text)):
        if flag in index.defs:
            yield Clue(index.defs[flag], weights.flag, f"the task names the flag `{flag}`, declared here")
    for token in _name_tokens(text):
        if token.lower() in _PROSE:
            continue
        if "." in token or "::" in token:
            yield from _dotted(token, index, weights)
        elif len(token) >= 3:
            shaped = "_" in token.strip("_") or _CAMEL.search(token) or token[:1].isupper()
            base = weights.name if shaped else weights.plain_name
            yield from _defined(token, base, index, weights)


def _defined(name: str, base: float, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Clue]:
    paths = index.defs.get(name)
    why = f"the task names `{name}`, defined here"
    if paths is None:
        if name.isupper() or name.islower():  # ``HEAD`` is no ``head``
            return
        folded = index.by_lower.get(name.lower(), ())
        if len(folded) != 1:
            return
        paths, base = index.defs[folded[0]], base * weights.folded_case
        why = f"the task names `{name}`, defined here as `{folded[0]}`"
    yield Clue(paths, base, why)


def _dotted(token: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Clue]:
    parts = [p for p in re.split(r"\.|::", token) if p]
    module = "/".join(parts)
    for ext in _MODULE_EXTS:
        found = resolve_path(module + ext, index)
        if found:
            yield Clue(found, weights.module, f"the task names the module `{token}`")
            break
    for first, second in itertools.pairwise(parts):
        pair = f"{first}.{second}"
        if pair in index.defs:
            yield Clue(index.defs[pair], weights.qualified, f"the task names `{pair}`, defined here")
        elif second in index.defs and len(second) >= 3:
            # `cache.Package`: prefer the files under a directory called like the qualifier
            defining = index.defs[second]
            under = tuple(p for p in defining if f"/{first.lower()}/" in "/" + p.lower())
            why = f"the task names `{first}.{second}`, defined here"
            yield Clue(under or defining, weights.qualified if under else weights.name, why)


def _strings(text: str, index: CheckoutIndex, weights: LocalizeWeights) -> Iterator[Clue]:
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
            yield Clue(index.strings[literal], base, f'the task quotes "{quoted}", a string here')


__all__ = [
    "DEFAULT_WEIGHTS",
    "Evidence",
    "LocalizeWeights",
    "Localized",
    "evidence",
    "localize",
    "resolve_path",
]
