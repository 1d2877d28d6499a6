"""The per-checkout index on disk: which files ``git ls-files`` tracks, their facts, the cache.

I/O only; what a file's facts are and how an index localizes a task is ``store.localize``'s. A checkout
is its root (``git rev-parse --show-toplevel``) at its ``HEAD``. The cache of a checkout lives in
``<cache_dir>/<sha1 of the root, 16 hex>/``:

- ``<head>.facts.json``: each tracked source file's ``[mtime_ns, size, defs, strings]`` — what a
  refresh compares: a file whose mtime and size did not change is not read again (a new ``HEAD`` of the
  same root starts from the newest facts file it has: a checkout rewrites only the files that changed);
- ``<head>.index.json``: the built ``CheckoutIndex`` (``to_json``), what localizing loads, as JSON lines
  (a header, then each key's dict or list in chunks: a loading thread holds the GIL a chunk at a time);
- ``build.lock``: held (``flock``) by the one build of this root that runs.

A cache file that does not parse or has the wrong shape is ignored (the next build writes it again); the
newest ``KEEP_HEADS`` heads of a root are kept. Files larger than ``MAX_FILE_BYTES``, with a NUL byte in
their first ``BINARY_SNIFF_BYTES`` or not a source language are listed by name only, without facts; a file
is read up to ``READ_BYTES``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from store.localize import CheckoutIndex, SourceFacts, facts

SOURCE_SUFFIXES = (".py", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".go", ".rs")
MAX_FILE_BYTES = 2 << 20  # larger: generated or vendored, listed by name only
READ_BYTES = 512 << 10  # of a source file, at most
BINARY_SNIFF_BYTES = 8192
MAX_TRACKED_FILES = 200_000  # of one checkout; past it the rest is left out
KEEP_HEADS = 3
GIT_TIMEOUT_SECONDS = 10.0
CACHE_VERSION = 1
LOCK_NAME = "build.lock"
CHUNK = 2000  # names, literals or files a line of the index file holds


class CheckoutError(Exception):
    """Raised when a checkout cannot be listed (no git, not a repository, git failed or timed out)."""


class BuildBusy(Exception):
    """Raised when another process holds the build lock of the checkout."""


@dataclass(frozen=True)
class Checkout:
    """A git checkout: its root directory and the full sha of its ``HEAD``."""

    root: str
    head: str


def _git(cwd: str, *args: str, timeout: float = GIT_TIMEOUT_SECONDS) -> bytes:
    try:
        done = subprocess.run(["git", "-C", cwd, *args], capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CheckoutError(f"git {args[0]} in {cwd}: {exc}") from exc
    if done.returncode != 0:
        raise CheckoutError(f"git {args[0]} in {cwd}: {done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout


def checkout_of(cwd: str, *, timeout: float = GIT_TIMEOUT_SECONDS) -> Checkout | None:
    """The checkout ``cwd`` lies in; None outside git or before a first commit. Read from ``.git`` (a
    prompt's path: no process), else asked of ``git`` (an unusual layout)."""
    root = _git_root(cwd)
    dot = os.path.join(root, ".git") if root is not None else ""
    if root is None or (os.path.isdir(dot) and not os.path.exists(os.path.join(dot, "HEAD"))):
        return None  # no repository up the tree: no git process
    return _read_checkout(cwd) or _ask_git(cwd, timeout)


def _git_root(cwd: str) -> str | None:
    """The nearest directory up from ``cwd`` holding a ``.git``; None when there is none."""
    here = os.path.abspath(cwd)
    while not os.path.exists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return here


def _read_checkout(cwd: str) -> Checkout | None:
    """The checkout from the files of the nearest ``.git`` up from ``cwd`` (a directory, or a worktree's
    ``gitdir:`` file); None when that is not plain (then git is asked)."""
    here = _git_root(cwd)
    if here is None:
        return None
    dot = os.path.join(here, ".git")
    try:
        gitdir = dot
        if os.path.isfile(dot):
            with open(dot, encoding="utf-8") as handle:
                gitdir = os.path.join(here, handle.read().strip().removeprefix("gitdir: "))
        common = gitdir
        if os.path.isfile(os.path.join(gitdir, "commondir")):
            with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
                common = os.path.join(gitdir, handle.read().strip())
        with open(os.path.join(gitdir, "HEAD"), encoding="utf-8") as handle:
            head = handle.read().strip()
        if head.startswith("ref: "):
            head = _ref(common, head[5:])
    except OSError:
        return None
    return Checkout(here, head) if len(head) == 40 else None


def _ref(common: str, name: str) -> str:
    """The sha ``name`` points at (loose, else packed); "" when not found. Raises OSError."""
    try:
        with open(os.path.join(common, name), encoding="utf-8") as handle:
            return handle.read().strip()
    except FileNotFoundError:
        pass
    try:
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as handle:
            for line in handle:
                sha, _, ref = line.strip().partition(" ")
                if ref == name:
                    return sha
    except FileNotFoundError:
        pass
    return ""


def _ask_git(cwd: str, timeout: float) -> Checkout | None:
    try:
        out = _git(cwd, "rev-parse", "--show-toplevel", "HEAD", timeout=timeout).decode("utf-8", "replace")
    except CheckoutError:
        return None
    lines = out.splitlines()
    if len(lines) != 2 or len(lines[1]) < 40:
        return None
    return Checkout(lines[0], lines[1].strip())


def tracked_files(root: str) -> list[str]:
    """The files ``git ls-files`` lists in ``root`` (relative, ``/``-separated), at most
    ``MAX_TRACKED_FILES``. Raises CheckoutError."""
    names = _git(root, "ls-files", "-z", "--cached").split(b"\0")
    return [os.fsdecode(n) for n in names if n][:MAX_TRACKED_FILES]


def root_dir(cache_dir: str, root: str) -> str:
    """The cache directory of the checkout root ``root``."""
    return os.path.join(cache_dir, hashlib.sha1(root.encode(), usedforsecurity=False).hexdigest()[:16])


def facts_path(cache_dir: str, checkout: Checkout) -> str:
    return os.path.join(root_dir(cache_dir, checkout.root), f"{checkout.head}.facts.json")


def index_path(cache_dir: str, checkout: Checkout) -> str:
    return os.path.join(root_dir(cache_dir, checkout.root), f"{checkout.head}.index.json")


FileFacts = dict[str, tuple[int, int, SourceFacts]]  # path -> (mtime_ns, size, facts)


def _read_json(path: str) -> dict[str, object] | None:
    """The object in ``path``; None when it is missing, does not parse or is no object of this version."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("v") == CACHE_VERSION else None


def load_facts(path: str) -> FileFacts:
    """The per-file facts of a facts file; {} when it is missing or corrupt."""
    return _facts_of(_read_json(path))


def _facts_of(data: dict[str, object] | None) -> FileFacts:
    files = data.get("files") if data else None
    if not isinstance(files, dict):
        return {}
    found: FileFacts = {}
    try:
        for name, (mtime, size, defs, strings) in files.items():
            found[str(name)] = (int(mtime), int(size), SourceFacts(tuple(defs), tuple(strings)))
    except (TypeError, ValueError):
        return {}
    return found


def load_index(cache_dir: str, checkout: Checkout) -> CheckoutIndex | None:
    """The index built for ``checkout``; None when there is none or it is corrupt (rebuild it). Parsed a
    line at a time: a thread loading it holds the GIL for one chunk at once, not the whole file."""
    try:
        with open(index_path(cache_dir, checkout), "rb") as handle:
            lines = handle.read().split(b"\n")
        head = json.loads(lines[0])
        if not isinstance(head, dict) or head.get("v") != CACHE_VERSION or head.get("root") != checkout.root:
            return None
        if head.get("lines") != len(lines) - 1:
            return None  # torn
        data: dict[str, object] = {}
        for line in lines[1:]:
            key, part = json.loads(line)
            data[key] = _merged(data.get(key), part)
        return CheckoutIndex.from_json(data)
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _whole(cache_dir: str, checkout: Checkout) -> bool:
    """Whether the index file of ``checkout`` has its header and all the lines it announces (no parse)."""
    try:
        with open(index_path(cache_dir, checkout), "rb") as handle:
            data = handle.read()
        head = json.loads(data.split(b"\n", 1)[0])
    except (OSError, ValueError):
        return False
    return (
        isinstance(head, dict)
        and head.get("lines") == data.count(b"\n")
        and head.get("root") == checkout.root
    )


def _merged(have: object, part: object) -> object:
    """``part`` added to what a key ``have``s so far (a chunk of a dict or a list, or the value)."""
    if isinstance(have, dict) and isinstance(part, dict):
        have.update(part)
        return have
    if isinstance(have, list) and isinstance(part, list):
        have.extend(part)
        return have
    return part


def newest_index(cache_dir: str, root: str) -> tuple[Checkout, CheckoutIndex] | None:
    """The newest readable index of any head of ``root`` (a client that cannot wait for a build)."""
    for head in _heads(root_dir(cache_dir, root), ".index.json"):
        checkout = Checkout(root, head)
        index = load_index(cache_dir, checkout)
        if index is not None:
            return checkout, index
    return None


def _heads(directory: str, suffix: str) -> list[str]:
    """The heads of the cache files ending in ``suffix`` in ``directory``, newest first."""
    try:
        entries = [e for e in os.scandir(directory) if e.name.endswith(suffix) and e.is_file()]
    except OSError:
        return []
    entries.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
    return [e.name.removesuffix(suffix) for e in entries]


def _source_facts(path: str, name: str, info: os.stat_result) -> SourceFacts | None:
    """The facts of one tracked file, None when it is not read (not source, too big, binary)."""
    if not name.endswith(SOURCE_SUFFIXES) or info.st_size > MAX_FILE_BYTES:
        return None
    with open(path, "rb") as handle:
        raw = handle.read(READ_BYTES)
    if b"\0" in raw[:BINARY_SNIFF_BYTES]:
        return None
    return facts(name, raw.decode("utf-8", "replace"))


def scan(root: str, names: list[str], previous: Mapping[str, tuple[int, int, SourceFacts]]) -> FileFacts:
    """The facts of the source files among ``names`` under ``root``: those of ``previous`` whose mtime
    and size are the same, the others read again. A file that vanished or cannot be read is left out."""
    found: FileFacts = {}
    for name in names:
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue  # a symbolic link, a submodule
            known = previous.get(name)
            if known is not None and known[0] == info.st_mtime_ns and known[1] == info.st_size:
                found[name] = known
                continue
            source = _source_facts(path, name, info)
        except OSError:
            continue
        if source is not None:
            found[name] = (info.st_mtime_ns, info.st_size, source)
    return found


@contextlib.contextmanager
def build_lock(cache_dir: str, root: str) -> Iterator[None]:
    """Hold the build lock of ``root``; raises BuildBusy when another process holds it, OSError."""
    directory = root_dir(cache_dir, root)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, LOCK_NAME), "a+b") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise BuildBusy(root) from exc
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(cache_dir: str, checkout: Checkout) -> CheckoutIndex | None:
    """List, scan (reading only what changed since the last build of this root), build and cache the
    index of ``checkout``; None when nothing changed since the last build of this HEAD (its index file is
    only touched: fresh again, and a process that loaded it need not parse it again). Raises
    CheckoutError, BuildBusy, OSError (a cache that cannot be written)."""
    with build_lock(cache_dir, checkout.root):
        names = tracked_files(checkout.root)
        digest = hashlib.sha1("\0".join(names).encode(), usedforsecurity=False).hexdigest()
        same = _read_json(facts_path(cache_dir, checkout))
        previous = _facts_of(same)
        if not previous:
            heads = _heads(root_dir(cache_dir, checkout.root), ".facts.json")
            previous = load_facts(facts_path(cache_dir, Checkout(checkout.root, heads[0]))) if heads else {}
        scanned = scan(checkout.root, names, previous)
        if same and same.get("names") == digest and scanned == previous and _whole(cache_dir, checkout):
            os.utime(index_path(cache_dir, checkout))
            return None
        index = CheckoutIndex.build(names, {name: item[2] for name, item in scanned.items()})
        _write(checkout, facts_path(cache_dir, checkout), "files", _facts_json(scanned), names=digest)
        _write_lines(checkout, index_path(cache_dir, checkout), index.to_json())
        _prune(root_dir(cache_dir, checkout.root))
    return index


def _facts_json(scanned: FileFacts) -> dict[str, object]:
    return {n: [m, s, list(f.defs), list(f.strings)] for n, (m, s, f) in scanned.items()}


def _write(checkout: Checkout, path: str, key: str, value: object, **more: object) -> None:
    """Write ``{"v", "root", "head", key: value, **more}`` to ``path`` atomically (temp file +
    ``os.replace``)."""
    body = {"v": CACHE_VERSION, "root": checkout.root, "head": checkout.head, key: value, **more}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        data = json.dumps(body, separators=(",", ":")).encode()  # one C call: json.dump streams in Python
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _chunks(value: object) -> list[object]:
    """``value`` in parts of ``CHUNK`` items when it is a dict or a list, else whole."""
    if isinstance(value, dict):
        items = list(value.items())
        return [dict(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK)] or [{}]
    if isinstance(value, list):
        return [value[i : i + CHUNK] for i in range(0, len(value), CHUNK)] or [[]]
    return [value]


def _write_lines(checkout: Checkout, path: str, index: dict[str, object]) -> None:
    """Write the index as JSON lines: a header, then ``[key, part]`` a line (``_chunks``), atomically."""
    parts = [
        json.dumps([key, part], separators=(",", ":"))
        for key, value in index.items()
        for part in _chunks(value)
    ]
    head = {"v": CACHE_VERSION, "root": checkout.root, "head": checkout.head, "lines": len(parts)}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as handle:
            handle.write("\n".join([json.dumps(head), *parts]).encode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _prune(directory: str) -> None:
    """Keep the cache files of the newest ``KEEP_HEADS`` heads."""
    for head in _heads(directory, ".facts.json")[KEEP_HEADS:]:
        for suffix in (".facts.json", ".index.json"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, head + suffix))
