"""Code-aware query understanding: the names, paths and frames a text mentions, as match keys. Pure.

A task text of 600 words says what it is about in a few code-shaped tokens: the component its title
names (``gopls/internal/golang/stubmethods:``, ``fix(@angular/build):``, ``[mypyc]``), identifiers
(``FieldSelection``, ``run_target``, ``cache.Package``, ```createRequire```), file names and module
paths (``crates/uv-cli/src/lib.rs``, ``mypy.checker``) and traceback frames (``File "x.py", line 3, in
f``). An entry says the same in its files and symbols. Both are reduced to *keys* in two namespaces:

- ``p:<segment>`` — a path segment (a directory, or a file's stem) lower-cased, and each ``-``/``_``/``.``
  part of it (``oxc-linker.ts`` → ``oxc-linker``, ``oxc``, ``linker``); ``p:<a>/<b>`` — two adjacent
  segments, which a query naming the component (``golang/stubmethods``) shares with every file under it.
- ``s:<name>`` — a symbol, lower-cased, whole (``FieldSelection`` → ``fieldselection``; ``Class.method``
  → ``class.method``, ``class`` and ``method``).

A query's identifiers and paths give keys in both namespaces; its plain words are looked up only as
path segments (``linker`` names the directory ``linker/``; a word is no symbol). ``CodeIndex`` weighs a
key by its IDF over the project's entries and sums what an entry shares: absolute evidence, not a share
of the query, so a long text is not diluted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, pairwise
from posixpath import splitext

import numpy as np
import numpy.typing as npt

from store.recall.index import Postings, idf
from store.recall.tokenize import STOPWORDS

FloatArray = npt.NDArray[np.float64]

# A path: two or more segments joined by "/" (an optional leading "@", "./", "/" or "~/"), or a file
# name with a source extension.
_PATH = re.compile(r"(?<![\w/.@-])[@~.]?/?(?:[\w.-]+/)+[\w.-]*[\w]|\b[\w-]+\.[A-Za-z]{1,5}\b")
_DOTTED = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+\b")
_IDENT = re.compile(r"\b[A-Za-z_$][\w$]*\b")
_FRAME = re.compile(r'File "([^"]+)", line \d+, in ([\w.<>]+)')
_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
_PART = re.compile(r"[-_.]+")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
# Extensions a file name in prose ends with (``lib.rs``, ``cmd.go``); a dotted name ending otherwise
# is a module or attribute path (``cache.Package``, ``mypy.checker``).
_EXTENSIONS = """
    py pyi rs go ts tsx js jsx mjs cjs c h cc cpp hpp java kt swift rb php cs scala sh toml json yaml yml
    md rst txt cfg ini lock mod sum html css scss vue svelte test golden proto sql
"""
SOURCE_EXTENSIONS = frozenset(_EXTENSIONS.split())
MIN_SEGMENT_CHARS = 2


@dataclass(frozen=True)
class CodeTerms:
    """What a text names: path keys, symbol keys, and the raw tokens they came from (for reasons)."""

    paths: frozenset[str]  # ``p:`` keys from paths, dotted names, identifiers and frames
    symbols: frozenset[str]  # ``s:`` keys from identifiers, dotted names and frames
    words: frozenset[str]  # ``p:`` keys of plain words (looked up as path segments only)

    @property
    def keys(self) -> frozenset[str]:
        """Every key to look up."""
        return self.paths | self.symbols | self.words


def _segment_keys(segment: str) -> list[str]:
    """``p:`` keys of one path segment: the segment (stem, for the last) lower-cased and its parts."""
    folded = segment.casefold().strip("-_.@~")
    if len(folded) < MIN_SEGMENT_CHARS:
        return []
    keys = [folded]
    parts = [p for p in _PART.split(folded) if len(p) >= MIN_SEGMENT_CHARS]
    if len(parts) > 1:
        keys += parts
    return ["p:" + k for k in keys if k not in STOPWORDS and not k.isdigit()]


@lru_cache(maxsize=1 << 14)
def path_keys(path: str) -> tuple[str, ...]:
    """``p:`` keys of a path: each segment's keys (the file's stem without its extension) and each pair
    of adjacent segments."""
    segments = [s for s in path.replace("\\", "/").split("/") if s and s not in (".", "..")]
    if not segments:
        return ()
    stem, ext = splitext(segments[-1])
    if ext and ext[1:].casefold() in SOURCE_EXTENSIONS and stem:
        segments[-1] = stem
    keys: list[str] = []
    for segment in segments:
        keys += _segment_keys(segment)
    folded = [s.casefold().strip("-_.@~") for s in segments]
    keys += [f"p:{a}/{b}" for a, b in pairwise(folded) if a and b]
    return tuple(keys)


def symbol_keys(name: str) -> list[str]:
    """``s:`` keys of a symbol or identifier: whole, and for a dotted name its last two parts joined and
    each part (``Class.method`` → ``class.method``, ``class``, ``method``)."""
    parts = [p for p in name.strip("`$.()").split(".") if p]
    if not parts:
        return []
    keys = [".".join(parts[-2:]).casefold()]
    if len(parts) > 1:
        keys += [p.casefold() for p in parts]
    return ["s:" + k for k in keys if len(k) >= MIN_SEGMENT_CHARS + 1 and k not in STOPWORDS]


def is_identifier(token: str) -> bool:
    """Whether a word is shaped like code: snake_case, camelCase / PascalCase with an inner capital, an
    ALL_CAPS constant with an underscore, or a ``$``."""
    core = token.strip("_")
    return "_" in core or "$" in core or bool(_CAMEL.search(core))


def entry_keys(files: Iterable[str], symbols: Iterable[str]) -> frozenset[str]:
    """The keys of an entry: its files' path keys and its symbols' keys."""
    keys: set[str] = set()
    for path in files:
        keys.update(path_keys(path))
    for name in symbols:
        keys.update(symbol_keys(name.rsplit("::", 1)[-1]))
    return frozenset(keys)


# (paths, symbols, plain words) of a chunk. Tuples, not frozensets: the memos hold tens of thousands of
# them, and the garbage collector stops tracking a tuple of strings, not a set
# (docs/decisions/0042-cold-tail-is-the-garbage-collector.md).
ChunkKeys = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def code_terms(text: str) -> CodeTerms:
    """The code a text names (see the module docstring)."""
    # Paths, dotted names and identifiers hold no whitespace: each distinct chunk is read once (memoized,
    # as the tokenizer's words are), which keeps a 600-word text well under a millisecond.
    return code_terms_of(text, map(chunk_keys, set(text.split())))


def code_terms_of(text: str, chunks: Iterable[ChunkKeys]) -> CodeTerms:
    """``code_terms(text)`` given ``chunk_keys`` of the text's whitespace-free chunks (each at least
    once; repeats do not matter)."""
    paths: set[str] = set()
    symbols: set[str] = set()
    words: set[str] = set()
    for file, function in _FRAME.findall(text) if 'File "' in text else ():
        paths.update(path_keys(file))
        symbols.update(symbol_keys(function))
    for span in set(_BACKTICK.findall(text)) if "`" in text else ():
        span_paths, span_symbols = _span_keys(span)
        paths.update(span_paths)
        symbols.update(span_symbols)
    found = [keys for keys in chunks if keys is not _NOTHING]
    paths.update(*(keys[0] for keys in found))
    symbols.update(*(keys[1] for keys in found))
    words.update(*(keys[2] for keys in found))
    return CodeTerms(frozenset(paths), frozenset(symbols), frozenset(words) - paths)


@lru_cache(maxsize=1 << 14)
def _span_keys(span: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(path keys, symbol keys) of the identifiers in one backticked span; memoized (spans repeat)."""
    paths: set[str] = set()
    symbols: set[str] = set()
    for ident in _IDENT.findall(span):
        symbols.update(symbol_keys(ident))
        paths.update(_segment_keys(ident))
    return tuple(paths), tuple(symbols)


@lru_cache(maxsize=1 << 16)
def chunk_keys(chunk: str) -> ChunkKeys:
    """(path keys, symbol keys, plain-word keys) of one whitespace-free chunk of a text."""
    if "/" not in chunk and "." not in chunk:  # no path, no dotted name: only words (most of prose)
        found = [keys for ident in _IDENT.findall(chunk) if any(keys := _word_keys(ident))]
        if len(found) < 2:  # one word (most chunks): its memoized keys as they are
            return found[0] if found else _NOTHING
        return (
            tuple(dict.fromkeys(chain.from_iterable(keys[0] for keys in found))),
            tuple(dict.fromkeys(chain.from_iterable(keys[1] for keys in found))),
            tuple(dict.fromkeys(chain.from_iterable(keys[2] for keys in found))),
        )
    paths: set[str] = set()
    symbols: set[str] = set()
    words: set[str] = set()
    for path in _PATH.findall(chunk):
        if "/" in path or splitext(path)[1][1:].casefold() in SOURCE_EXTENSIONS:
            paths.update(path_keys(path))
    for dotted in _DOTTED.findall(chunk):
        if splitext(dotted)[1][1:].casefold() not in SOURCE_EXTENSIONS:
            paths.update(path_keys("/".join(dotted.split("."))))
            symbols.update(symbol_keys(dotted))
    for ident in _IDENT.findall(chunk):
        ident_paths, ident_symbols, ident_words = _word_keys(ident)
        paths.update(ident_paths)
        symbols.update(ident_symbols)
        words.update(ident_words)
    if not (paths or symbols or words):
        return _NOTHING
    return tuple(paths), tuple(symbols), tuple(words)


_NOTHING: ChunkKeys = ((), (), ())


@lru_cache(maxsize=1 << 16)
def _word_keys(ident: str) -> ChunkKeys:
    """(path keys, symbol keys, plain-word keys) of one word of a text; memoized (words repeat)."""
    if is_identifier(ident):
        return tuple(_segment_keys(ident)), tuple(symbol_keys(ident)), ()
    return (), (), tuple(_segment_keys(ident))


class CodeIndex:
    """Entries' code keys as postings, with IDF over the entries, for absolute shared-key evidence."""

    def __init__(self, key_sets: Sequence[frozenset[str]]) -> None:
        """One key set per entry (row order = entry order)."""
        self.size = n = len(key_sets)
        rows_of: dict[str, list[int]] = {}
        for row, keys in enumerate(key_sets):
            for key in keys:
                rows_of.setdefault(key, []).append(row)
        self.postings = {k: np.array(r, dtype=np.intp) for k, r in rows_of.items()}
        self.idf = {k: idf(n, len(r)) for k, r in rows_of.items()}
        self.packed = Postings(rows_of, n)
        self._idf = np.fromiter(self.idf.values(), dtype=np.float64, count=len(self.idf))

    def evidence(
        self, keys: Iterable[str], *, weight: float = 1.0, out: FloatArray | None = None
    ) -> FloatArray:
        """Per entry, the summed IDF (times ``weight``) of ``keys`` it holds, added into ``out``."""
        known = self.packed.key_ids(keys)
        found = self.packed.weighted_sum(known, weight * self._idf[known])
        if out is None:
            return found
        out += found
        return out

    def matched(self, keys: Iterable[str], row: int) -> list[str]:
        """The keys of ``keys`` entry ``row`` holds (for the reasons a fix was recalled)."""
        return [k for k in keys if (rows := self.postings.get(k)) is not None and row in rows]


_CODE_LINE = re.compile(
    r'File "[^"]+", line \d+|Traceback \(most recent|^\s*at\s+\S+[:(]|^\s{4,}\S|`|\w/\w|\w\.\w+\('
)


def fit_query(text: str, max_chars: int) -> str:
    """``text`` within ``max_chars``: as it is when it fits, else its head plus, after a ``…`` line, the
    later lines that hold code (traceback frames, paths, code spans, indented code) while they fit.
    Recall reads names and paths; a long log or issue keeps them rather than its middle prose."""
    if len(text) <= max_chars:
        return text
    head_chars = max_chars // 2
    head = text[:head_chars]
    cut = head.rfind("\n")
    head = head[:cut] if cut > head_chars // 2 else head
    room = max_chars - len(head) - 2
    kept: list[str] = []
    for line in text[len(head) :].splitlines():
        if _CODE_LINE.search(line) and len(line) + 1 <= room:
            kept.append(line)
            room -= len(line) + 1
    return "\n".join([head, "…", *kept])[:max_chars]
