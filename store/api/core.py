"""The core every part of ``FixStore`` stands on: its settings, the parse cache, project files, the lock.

Parsed logs and their derived views are cached per file, keyed by the file's identity (see
``store.persist.fixlog``), so a warm recall parses and tokenizes nothing. Every write of a project happens
under flock on the sibling ``.lock`` file, taken inside the pluggable lock ``lock_factory(owner,
project_key)`` when there is one, and starts by re-validating the cached parse against the file
(``_prepare``).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from store.entry import FixEntry, content_key
from store.errors import StoreUnavailable, unavailable
from store.history import RegressionRule
from store.meaning import Meaning
from store.paths import ROOT_DIR_NAME, ProjectFiles, canonical_key, is_log_file, owner_dir, project_files
from store.persist import fixlog
from store.persist.fixlog import Snapshot
from store.persist.fsio import flock, remove_stale_temps
from store.persist.rotation import plan_rotation, should_rotate
from store.persist.summary_file import Stamp
from store.recall.index import usable_index
from store.recall.ranking import DEFAULT_WEIGHTS, RankingWeights
from store.recall.view import ProjectView
from store.summary import LogSummary
from store.usage import DEFAULT_PARAMS, Learned, LearnParams, Usage

LockFactory = Callable[[str, str], AbstractContextManager[object]]
_NO_FLOCK = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL})  # flock unsupported
CACHE_PROJECTS = 256
DEFAULT_CACHE_BYTES = 256 << 20
_RECOUNT_EVERY = 64  # changes of the cache between two sums of every item's size (``_remember``)

_log = logging.getLogger("store.api")


@dataclass
class Cached:
    """A parse of the log (``snapshot``: every line) and the view of what it holds once rotated to the cap
    (``view``; ``rows``: each of its entries' index in ``snapshot.entries``). They differ only when a writer
    with rotation slack left lines past the cap on disk (``FixStore``'s ``slack``)."""

    snapshot: Snapshot
    view: ProjectView
    contents: set[bytes | None] | None = None  # content_key of every entry, computed at the first append
    rows: tuple[int, ...] | None = None  # None: every line, in order

    def line_rows(self) -> Sequence[int]:
        """The index in ``snapshot.entries`` of each entry of ``view``."""
        return range(len(self.snapshot.entries)) if self.rows is None else self.rows

    def raw_lines(self) -> list[bytes]:
        """The exact line of each entry of ``view``."""
        raw = self.snapshot.raw
        return list(raw) if self.rows is None else [raw[i] for i in self.rows]

    def content_keys(self) -> set[bytes | None]:
        """The ``content_key`` of every entry of the log (computed once per cached parse)."""
        if self.contents is None:
            self.contents = {content_key(e) for e in self.view.entries}
        return self.contents


class StoreCore:
    """The state of a store and the helpers its parts share (``store.api.FixStore`` is the public face)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        cap: int,
        lock_factory: LockFactory | None = None,
        weights: RankingWeights = DEFAULT_WEIGHTS,
        regression_rule: RegressionRule | None = None,
        clock: Callable[[], float] = time.time,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        slack: int = 0,
        learn_from_use: bool = False,
        learn_params: LearnParams = DEFAULT_PARAMS,
        meaning: Meaning | None = None,
    ) -> None:
        """A store rooted at ``data_dir``; nothing is created until the first write.

        ``cap``: most entries kept per project (fixmem's ``rotation_cap`` setting).
        ``lock_factory(owner, project_key)``: a context manager held around every write of that project,
        outside the flock on the sibling ``.lock`` file that every write takes (pass a distributed lock on
        network filesystems). ``weights``: recall ranking.
        ``clock``: unix seconds.
        ``cache_bytes``: memory for parsed logs and their vectors (about 4 KiB per entry), least
        recently used projects evicted first.
        ``slack``: lines past ``cap`` an append may leave on disk instead of rewriting the log (rotation
        with slack: the log is rewritten once it would hold more than ``cap + slack`` lines). Whatever the
        slack, every reader applies the rotation order to the lines at ``cap``, so what the store answers
        is the same as with none; only the file holds more lines.
        ``learn_from_use``: recall multiplies each fix's strength by what its use in agent sessions says
        (``store.usage``, with ``learn_params``; ``FIXMEM_LEARN_FROM_USE``, off by default); the usage
        file beside each log is kept either way.
        ``meaning``: the meaning signal (``store.meaning``, an optional extra) for a text-only recall that
        finds nothing over the floor; None (the default): text only.
        Raises ValueError when ``cap`` is below 1 or ``slack`` below 0.
        """
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap}")
        if slack < 0:
            raise ValueError(f"slack must be >= 0, got {slack}")
        self.slack = slack
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / ROOT_DIR_NAME
        self.cap = cap
        self.weights = weights
        self._lock_factory = lock_factory
        self._rule = regression_rule or RegressionRule()
        self._clock = clock
        self._cache: OrderedDict[Path, Cached] = OrderedDict()
        self._cache_mutex = threading.Lock()
        self._cache_bytes = cache_bytes
        self._cache_sizes: dict[Path, int] = {}  # by log: its view's memory_bytes when last remembered
        self._cache_total = 0  # the sum of _cache_sizes
        self._cache_changes = 0
        self._files_memo: dict[tuple[str, str], ProjectFiles] = {}
        self._summaries: dict[Path, tuple[Stamp, LogSummary]] = {}  # by log: the last summary known
        self.learn_from_use = learn_from_use
        self.learn_params = learn_params
        self.meaning = meaning
        self._usages: dict[Path, tuple[Stamp, Usage]] = {}  # by log: the last usage known
        self._learned_memo: dict[Path, tuple[ProjectView, Learned | None]] = {}  # by log: its multipliers

    @property
    def lock_factory(self) -> LockFactory | None:
        """The lock taken around every write of a project (None: the flock alone)."""
        return self._lock_factory

    # -- the parse cache -----------------------------------------------------------------------------

    def _cached(self, files: ProjectFiles) -> Cached | None:
        with self._cache_mutex:
            return self._cache.get(files.log)

    def _load(self, files: ProjectFiles) -> Cached:
        """The current parse and view of a project's log, from the cache when the file is unchanged."""
        cached = self._cached(files)
        snapshot, extends = fixlog.read_snapshot(files.log, cached.snapshot if cached else None)
        return self._adopt(files, cached, snapshot, extends)

    def _adopt(self, files: ProjectFiles, cached: Cached | None, snapshot: Snapshot, extends: bool) -> Cached:
        """Cache ``snapshot`` with its view, reusing the cached view when the log only grew."""
        if cached is not None and snapshot is cached.snapshot:
            current = cached
        elif cached is not None and extends:
            start = len(cached.snapshot.entries)
            grown = snapshot.entries[start:]
            contents = None if cached.contents is None else cached.contents | {content_key(e) for e in grown}
            rows = [*cached.line_rows(), *range(start, len(snapshot.entries))]
            current = self._rotated(Cached(snapshot, cached.view.extend(grown), contents, tuple(rows)))
        else:
            entries: Sequence[FixEntry] = snapshot.entries
            rows = None
            if should_rotate(len(entries), self.cap):  # lines a writer with slack left past the cap
                plan = plan_rotation(entries, self.cap)
                rows, entries = plan.kept_rows, plan.keep
            index = fixlog.read_index(files.index) if entries else None
            view = ProjectView(entries, index=index, regression_rule=self._rule)
            if entries and usable_index(index, [e.id for e in entries]) is None:
                self._rebuild_index(files, view)
            current = Cached(snapshot, view, rows=None if rows is None else tuple(rows))
        self._remember(files.log, current)
        return current

    @staticmethod
    def _rebuild_index(files: ProjectFiles, view: ProjectView) -> None:
        """Write the index of ``view``, found missing or unusable on disk (an older version's sealed index,
        a torn one); a reader does it too, without the lock: an index it writes for a log changed meanwhile
        holds other ids and is found stale, and one interleaved with a writer's fails its seal. Never
        raises (the caller is reading)."""
        try:
            fixlog.write_index(files.index, view.index_bytes())
        except Exception as exc:
            _log.debug("fix store: could not rebuild %s (%s)", files.index, exc)

    def _rotated(self, cached: Cached) -> Cached:
        """``cached`` with its view rotated to the cap (the rotation order is associative while no
        outcome changes, and a verdict rewrites the log: rotating the lines at once or one append at a
        time keeps the same entries)."""
        view = cached.view
        if not should_rotate(len(view.entries), self.cap):
            return cached
        keep = plan_rotation(view.entries, self.cap).kept_rows
        rows = cached.line_rows()
        return Cached(cached.snapshot, view.subset(keep), None, tuple(rows[i] for i in keep))

    def _remember(self, path: Path, value: Cached) -> None:
        """Keep ``value`` as the newest cache item; evict the least recently used beyond the bounds.

        The cache's bytes are a running total (each item's size when it was last remembered), not a sum
        over every cached project at each write, which cost a writer O(cached projects) an append. A view
        grows after it is remembered when its vectors are computed lazily (a recall): its size is taken
        again whenever it is remembered, and the whole total every ``_RECOUNT_EVERY`` changes.
        """
        with self._cache_mutex:
            changed = self._cache.get(path) is not value
            self._cache[path] = value
            self._cache.move_to_end(path)
            size = value.view.memory_bytes()
            self._cache_total += size - self._cache_sizes.get(path, 0)
            self._cache_sizes[path] = size
            if not changed:
                return
            self._cache_changes += 1
            if self._cache_changes % _RECOUNT_EVERY == 0:
                self._cache_sizes = {p: c.view.memory_bytes() for p, c in self._cache.items()}
                self._cache_total = sum(self._cache_sizes.values())
            while len(self._cache) > 1 and (
                len(self._cache) > CACHE_PROJECTS or self._cache_total > self._cache_bytes
            ):
                evicted, _ = self._cache.popitem(last=False)
                self._cache_total -= self._cache_sizes.pop(evicted)

    # -- files and the write lock --------------------------------------------------------------------

    def _files(self, owner: str, project_key: str) -> ProjectFiles:
        """The project's files (memoized: two SHA-256 and some path work per call otherwise)."""
        key = (owner, project_key)
        files = self._files_memo.get(key)
        if files is None:
            files = project_files(self.root, owner, project_key)
            if len(self._files_memo) >= 4096:
                self._files_memo.clear()
            self._files_memo[key] = files
        return files

    def _owner_logs(self, owner: str) -> Iterator[ProjectFiles]:
        directory = owner_dir(self.root, owner)
        try:
            names = sorted(os.listdir(directory))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise unavailable(directory, exc) from exc
        for name in names:
            if is_log_file(name):
                yield ProjectFiles(directory, name[: -len(".jsonl")])

    @contextmanager
    def _lock(self, owner: str, project_key: str, files: ProjectFiles) -> Iterator[None]:
        """The project's write lock: the factory's (named by the canonical key: writers, who know the raw
        key, and ``forget``, which knows the stored, redacted one, must take the same), then the flock."""
        with ExitStack() as held:
            if self._lock_factory is not None:
                held.enter_context(self._lock_factory(owner, canonical_key(project_key)))
            try:
                held.enter_context(flock(files.lock))
            except StoreUnavailable as exc:  # a network file system without flock: the factory's lock
                if self._lock_factory is None or exc.errno not in _NO_FLOCK:  # alone serializes writers there
                    raise
            yield

    def _prepare(self, files: ProjectFiles, *, sweep: bool = False) -> tuple[Cached, int]:
        """Under the lock: the re-validated parse with a torn tail repaired, and lines quarantined.

        Temp files of rewrites killed midway (a worker SIGKILLed in a rotation) are deleted here.
        """
        remove_stale_temps(files.log, force=sweep)
        remove_stale_temps(files.index, force=sweep)
        cached = self._cached(files)
        snapshot, extends, moved = fixlog.prepare_for_write(
            files.log, files.quarantine, cached.snapshot if cached else None, now=self._clock()
        )
        return self._adopt(files, cached, snapshot, extends), moved
