"""A checkout's symbol and string index: which files define a name, which hold a literal. Pure.

Built from the checkout's file list (``git ls-files``: every file, sources or not) and the
``SourceFacts`` of its source files; the caller reads the files. Lookups the resolver needs are dict
lookups: a name's defining files, a file name's paths (the *basename map*), a file stem's paths (the
*stem map*: ``best-practices.ts`` under ``bestpractices``), a directory name's directories, and the
literals that start with a pair of words (the *string keys*), all derived once when the index is made.

``to_json`` gives a compact shape (files once, postings as indices into them) that ``from_json``
reads back, raising ``ValueError`` on anything else.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from posixpath import basename
from typing import cast

from store.localize.facts import SourceFacts

JSON_VERSION = 1


def stem_key(word: str) -> str:
    """A file stem or a word as the stem map keys it: lower case, without ``-``, ``_`` and ``.``."""
    return word.lower().replace("-", "").replace("_", "").replace(".", "")


@dataclass(frozen=True)
class CheckoutIndex:
    """What a checkout's files define and hold, by name and by normalized literal."""

    files: tuple[str, ...]
    defs: Mapping[str, tuple[str, ...]]
    strings: Mapping[str, tuple[str, ...]]
    by_basename: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    by_lower: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    string_keys: Mapping[tuple[str, str], tuple[str, ...]] = field(init=False, repr=False, compare=False)
    by_stem: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    by_dirname: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bases: defaultdict[str, list[str]] = defaultdict(list)
        stems: defaultdict[str, list[str]] = defaultdict(list)
        dirs: defaultdict[str, set[str]] = defaultdict(set)
        for path in self.files:
            name = basename(path).lower()
            bases[name].append(path)
            stems[stem_key(name.split(".", 1)[0])].append(path)
            parts = path.split("/")[:-1]
            for end in range(1, len(parts) + 1):
                dirs[parts[end - 1].lower()].add("/".join(parts[:end]))
        lower: defaultdict[str, list[str]] = defaultdict(list)
        for name in self.defs:
            lower[name.lower()].append(name)
        keys: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
        for literal in self.strings:
            first, second = literal.split(" ", 2)[:2]
            keys[first, second].append(literal)
        object.__setattr__(self, "by_basename", {k: tuple(v) for k, v in bases.items()})
        object.__setattr__(self, "by_lower", {k: tuple(v) for k, v in lower.items()})
        object.__setattr__(self, "string_keys", {k: tuple(v) for k, v in keys.items()})
        object.__setattr__(self, "by_stem", {k: tuple(v) for k, v in stems.items() if k})
        object.__setattr__(self, "by_dirname", {k: tuple(sorted(v)) for k, v in dirs.items()})

    @classmethod
    def build(cls, files: Iterable[str], facts_by_path: Mapping[str, SourceFacts]) -> CheckoutIndex:
        """The index of ``files`` (repo-relative) whose sources' facts are ``facts_by_path``."""
        paths = tuple(dict.fromkeys(files))
        defs: defaultdict[str, list[str]] = defaultdict(list)
        strings: defaultdict[str, list[str]] = defaultdict(list)
        for path in paths:
            found = facts_by_path.get(path)
            if found is None:
                continue
            for name in found.defs:
                defs[name].append(path)
            for literal in found.strings:
                if " " in literal:
                    strings[literal].append(path)
        return cls(
            files=paths,
            defs={k: tuple(dict.fromkeys(v)) for k, v in defs.items()},
            strings={k: tuple(dict.fromkeys(v)) for k, v in strings.items()},
        )

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: the files once, each posting as indices into them."""
        at = {path: i for i, path in enumerate(self.files)}
        return {
            "version": JSON_VERSION,
            "files": list(self.files),
            "defs": {name: [at[p] for p in paths] for name, paths in self.defs.items()},
            "strings": {lit: [at[p] for p in paths] for lit, paths in self.strings.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> CheckoutIndex:
        """The index ``to_json`` gave; raises ValueError on another shape or version."""
        if not isinstance(data, Mapping) or data.get("version") != JSON_VERSION:
            raise ValueError("not a checkout index (version)")
        files = data.get("files")
        if not isinstance(files, list) or not all(isinstance(p, str) for p in files):
            raise ValueError("checkout index: files must be a list of strings")
        paths = tuple(cast("list[str]", files))
        return cls(
            files=paths,
            defs=_postings(data.get("defs"), paths, "defs"),
            strings=_postings(data.get("strings"), paths, "strings"),
        )


def _postings(raw: object, paths: tuple[str, ...], what: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise ValueError(f"checkout index: {what} must be an object")
    out: dict[str, tuple[str, ...]] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, list):
            raise ValueError(f"checkout index: {what} maps names to lists")
        if what == "strings" and " " not in key:
            raise ValueError("checkout index: a string literal has two words or more")
        try:
            out[key] = tuple(paths[i] for i in value if type(i) is int and i >= 0)
        except IndexError as exc:
            raise ValueError(f"checkout index: {what} points past the files") from exc
        if len(out[key]) != len(value):
            raise ValueError(f"checkout index: {what} postings are file indices")
    return out
