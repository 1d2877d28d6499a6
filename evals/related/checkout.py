"""The workspace of each replayed task, from a bare git dir: the first parent's tree, indexed, then cut
down to what the task's text looks up (run by hand: full histories are not fetchable in CI).

``python -m evals.related.workspace build --git-dir DIR`` calls ``derive``: for every task commit of the
repository's data file (after the warm-up, both halves) it lists the first parent's tree (``git ls-tree
-r``), reads the source blobs (``git cat-file --batch``; facts cached by blob id, so a file unchanged
between commits is read once), builds the real ``CheckoutIndex`` and runs the real resolver over it with
every lookup recorded. What it keeps per task is the *restricted index*: the files, names and literals
those lookups touched, with their full postings. ``localize(text, restricted)`` then equals
``localize(text, full)`` for any ``LocalizeWeights`` whose ``max_files`` is at most ``RECORD_MAX_FILES``
(a name defined in more files is dropped either way), so the weighting can still be tuned offline.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from evals.related.core import WARMUP, Repo
from store.localize import CheckoutIndex, SourceFacts, facts
from store.localize.facts import EMPTY
from store.localize.resolve import DEFAULT_WEIGHTS, LocalizeWeights, evidence, localize

RECORD_MAX_FILES = 50
MAX_BLOB_BYTES = 1_000_000
SOURCE_SUFFIXES = (".py", ".pyi", ".go", ".rs", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


class _Recorder(dict[Any, Any]):
    """A dict that remembers every key asked of it (``get``, ``[]``, ``in``)."""

    def __init__(self, data: Mapping[Any, Any]) -> None:
        super().__init__(data)
        self.asked: set[Any] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(key)
        return super().__contains__(key)


def restrict(index: CheckoutIndex, text: str) -> CheckoutIndex:
    """The part of ``index`` that resolving ``text`` reads (module docstring)."""
    fields = ("defs", "strings", "by_basename", "by_lower", "string_keys", "by_stem", "by_dirname")
    saved = {name: getattr(index, name) for name in fields}
    recorders = {name: _Recorder(value) for name, value in saved.items()}
    try:
        for name, recorder in recorders.items():
            object.__setattr__(index, name, recorder)
        weights = LocalizeWeights(max_files=RECORD_MAX_FILES)
        for _ in evidence(text, index, weights):
            pass
    finally:
        for name, value in saved.items():
            object.__setattr__(index, name, value)
    names = set(recorders["defs"].asked)
    for folded in recorders["by_lower"].asked:
        names.update(saved["by_lower"].get(folded, ()))
    defs = {n: saved["defs"][n] for n in names if n in saved["defs"]}
    strings = {s: saved["strings"][s] for s in recorders["strings"].asked if s in saved["strings"]}
    files = {p for key in recorders["by_basename"].asked for p in saved["by_basename"].get(key, ())}
    files.update(p for key in recorders["by_stem"].asked for p in saved["by_stem"].get(key, ()))
    dirs = {d for key in recorders["by_dirname"].asked for d in saved["by_dirname"].get(key, ())}
    for path in index.files:  # one file under each directory a component lookup saw keeps it there
        for d in [d for d in dirs if path.startswith(d + "/")]:
            files.add(path)
            dirs.discard(d)
    for paths in (*defs.values(), *strings.values()):
        files.update(paths)
    return CheckoutIndex(files=tuple(sorted(files)), defs=defs, strings=strings)


class GitTrees:
    """Trees and blobs of one bare git dir; source facts cached by blob id."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._facts: dict[str, SourceFacts] = {}
        self._batch = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def close(self) -> None:
        if self._batch.stdin:
            self._batch.stdin.close()
        self._batch.wait()

    def git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), *args], check=True, capture_output=True, text=True
        )
        return out.stdout

    def first_parent(self, sha: str) -> str:
        return self.git("rev-parse", f"{sha}^1").strip()

    def tree(self, commit: str) -> list[tuple[str, str]]:
        """``(path, blob id)`` of every file of ``commit``'s tree."""
        out = []
        for record in self.git("ls-tree", "-r", "-z", "--full-tree", commit).split("\0"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            _, kind, blob = meta.split()
            if kind == "blob":
                out.append((path, blob))
        return out

    def _read(self, blob: str) -> bytes:
        stdin, stdout = self._batch.stdin, self._batch.stdout
        assert stdin is not None and stdout is not None
        stdin.write(blob.encode() + b"\n")
        stdin.flush()
        size = int(stdout.readline().split()[2])
        data = _read_exactly(stdout, size + 1)[:-1]
        return data

    def facts_of(self, path: str, blob: str) -> SourceFacts:
        if not path.endswith(SOURCE_SUFFIXES):
            return EMPTY
        cached = self._facts.get(blob)
        if cached is None:
            data = self._read(blob)
            text = "" if len(data) > MAX_BLOB_BYTES else data.decode("utf-8", errors="replace")
            cached = self._facts[blob] = facts(path, text)
        return cached

    def index(self, commit: str) -> CheckoutIndex:
        """The ``CheckoutIndex`` of ``commit``'s tree."""
        files = self.tree(commit)
        return CheckoutIndex.build([p for p, _ in files], {p: self.facts_of(p, b) for p, b in files})


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("git cat-file ended early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def tasks(repo: Repo, warmup: int = WARMUP) -> Iterator[tuple[int, str, str]]:
    """``(position, sha, text)`` of every task commit the replay asks (after the warm-up)."""
    for position, commit in enumerate(repo.commits):
        if position >= warmup and commit.is_task:
            yield position, commit.sha, commit.text


def derive(repo: Repo, git_dir: Path, log: IO[str] = sys.stderr, warmup: int = WARMUP) -> dict[str, Any]:
    """Per task commit of ``repo``: its parent, the tree's size, the restricted index, and how long
    ``localize`` took over the full index (seconds)."""
    trees = GitTrees(git_dir)
    out: dict[str, Any] = {}
    try:
        for n, (_, sha, text) in enumerate(tasks(repo, warmup)):
            parent = trees.first_parent(sha)
            full = trees.index(parent)
            start = time.perf_counter()
            localize(text, full, weights=DEFAULT_WEIGHTS)
            seconds = time.perf_counter() - start
            out[sha] = {
                "parent": parent,
                "tree_files": len(full.files),
                "full_index_seconds": round(seconds, 6),
                "index": restrict(full, text).to_json(),
            }
            if n % 25 == 0:
                log.write(f"{repo.name}: {n} tasks\n")
    finally:
        trees.close()
    return {"repo": repo.name, "head": repo.head, "record_max_files": RECORD_MAX_FILES, "tasks": out}


def data_path(data_dir: Path, repo_name: str) -> Path:
    """Where the derived workspace data of ``repo_name`` lives."""
    return data_dir / "workspace" / (repo_name.replace("/", "__") + ".json.gz")


def write(data: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))


def read(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return loaded


def chosen_repo(git_dir: Path, name: str | None, repos: Sequence[Repo]) -> Repo:
    """The repository of ``repos`` a by-hand build is for: the one named ``name``, else the one whose
    head ``git_dir`` holds. Raises SystemExit unless exactly one is."""
    found = (
        [r for r in repos if r.name == name] if name else [r for r in repos if _has_commit(git_dir, r.head)]
    )
    if len(found) != 1:
        raise SystemExit(f"{git_dir}: holds the head of {len(found)} data files; pass --repo owner/name")
    return found[0]


def _has_commit(git_dir: Path, sha: str) -> bool:
    probe = ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{sha}^{{commit}}"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def build_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """The by-hand build's arguments: ``build``, ``--git-dir``, ``--repo`` (``what``: what it derives)."""
    parser.add_argument(
        "command", nargs="?", choices=["build"], help=f"derive one repository's {what} (by hand)"
    )
    parser.add_argument("--git-dir", type=Path, help="build: the bare git dir holding the history")
    parser.add_argument(
        "--repo", help="build: owner/name (default: the data file whose head the git dir holds)"
    )


def built(
    parser: argparse.ArgumentParser, args: argparse.Namespace, build: Callable[[Path, str | None], Path]
) -> bool:
    """Run ``build`` when ``args`` ask for it (and say what it wrote); whether they did."""
    if args.command != "build":
        return False
    if args.git_dir is None:
        parser.error("build needs --git-dir")
    sys.stdout.write(f"wrote {build(args.git_dir, args.repo)}\n")
    return True
