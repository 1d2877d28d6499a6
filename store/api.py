"""``FixStore``: the store's public face. Thin I/O around the pure cores (one project = one log file).

Every write of a project happens under flock on the sibling ``.lock`` file, taken inside the pluggable
lock ``lock_factory(owner, project_key)`` when there is one (the pipeline's Redis lease lock, for hosts
sharing a network volume), and starts by re-validating the cached parse against the file. The flock is
always taken, so a local writer without the factory (``FixMemory``, a CLI run) still excludes the others.
Readers take no lock and change nothing. Parsed logs and their derived views are cached per file, keyed
by the file's identity (see ``store.persist.fixlog``), so a warm recall parses and tokenizes nothing.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import orjson

from store.entry import ENTRY_ID_PATTERN, FixEntry, Outcome, content_key
from store.errors import InvalidEntry, InvalidKey, StoreUnavailable, unavailable
from store.history import RegressionRule, lineage
from store.paths import ROOT_DIR_NAME, ProjectFiles, canonical_key, is_log_file, owner_dir, project_files
from store.persist import fixlog
from store.persist.fixlog import MalformedLine, Snapshot
from store.persist.forgotten import add_forgotten, read_forgotten
from store.persist.fsio import ensure_dir, flock, remove_stale_temps
from store.persist.repair import Repaired, plan_relink
from store.persist.rotation import plan_rotation, should_rotate
from store.persist.summary_file import Stamp, read_summary, write_summary
from store.recall.ranking import DEFAULT_WEIGHTS, RankingWeights
from store.recall.search import Recalled, recall_view
from store.recall.vectors import embed_many
from store.recall.view import ProjectView, meaning_tokens
from store.reconcile import reconcile
from store.redact import might_hold_secret, redact, redact_obj
from store.stats import Stats, compute_stats
from store.summary import EMPTY_SUMMARY, LogSummary, summarize
from store.verdicts import State, Verdict, agent_outcome, judge, state_of

LockFactory = Callable[[str, str], AbstractContextManager[object]]
_NO_FLOCK = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL})  # flock unsupported
CACHE_PROJECTS = 256
DEFAULT_CACHE_BYTES = 256 << 20

_ID_RE = re.compile(ENTRY_ID_PATTERN)
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppendResult:
    """What one ``append`` did.

    ``added``: the new entries as written (redacted, ``supersedes`` set), in batch order — including any
    that rotation then dropped at once. ``duplicates``: ids already in the log (or repeated in the batch),
    skipped. ``dropped``: entries rotation removed (old or new; count them by outcome).
    ``quarantined``: lines moved to the quarantine file (a torn tail, malformed lines on rewrite).
    ``forgotten``: ids ``forget`` deleted earlier (a replayed turn), refused (``store.persist.forgotten``).
    ``same_content``: new ids whose content an entry of the log already holds (``store.entry.content_key``:
    the same turn recorded under an id of an earlier rule, e.g. a backfill that once keyed turns by path).
    """

    added: list[FixEntry]
    duplicates: list[str]
    dropped: list[FixEntry]
    quarantined: int
    forgotten: list[str] = field(default_factory=list)
    same_content: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Judged:
    """What ``apply_verdicts`` made of one verdict: ``state`` (``applied``: it is the verdict in effect;
    ``superseded``: one that ranks above it is; ``missing``: no such entry in the log; ``forgotten``: the
    entry was deleted by ``forget``) and the entry's own agent label (None when there is no entry)."""

    verdict: Verdict
    state: State
    agent_outcome: Outcome | None = None


@dataclass(frozen=True)
class ReadResult:
    """A project's valid entries (log order), its malformed lines, and whether a write seemed underway."""

    entries: list[FixEntry]
    malformed: list[MalformedLine]
    incomplete_tail: bool = False  # bytes after the last newline (a write in progress, or torn)


def _redacted(entry: FixEntry) -> FixEntry:
    """``entry`` with every string redacted (defence in depth: extraction redacts already)."""
    data = entry.model_dump()
    if not might_hold_secret(orjson.dumps(data).decode()):  # one scan instead of one per field
        return entry
    return FixEntry.model_validate(redact_obj(data))


def _redacted_verdict(verdict: Verdict) -> Verdict:
    return Verdict(verdict.entry_id, verdict.source, verdict.outcome, verdict.ts, redact(verdict.detail))


@dataclass
class _Cached:
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


class FixStore:
    """Per-project JSONL fix logs under ``<data_dir>/fix_memory/`` (see ``store.paths`` for the layout)."""

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
        self._cache: OrderedDict[Path, _Cached] = OrderedDict()
        self._cache_mutex = threading.Lock()
        self._cache_bytes = cache_bytes
        self._files_memo: dict[tuple[str, str], ProjectFiles] = {}
        self._summaries: dict[Path, tuple[Stamp, LogSummary]] = {}  # by log: the last summary known

    # -- reading -------------------------------------------------------------------------------------

    def _cached(self, files: ProjectFiles) -> _Cached | None:
        with self._cache_mutex:
            return self._cache.get(files.log)

    def _load(self, files: ProjectFiles) -> _Cached:
        """The current parse and view of a project's log, from the cache when the file is unchanged."""
        cached = self._cached(files)
        snapshot, extends = fixlog.read_snapshot(files.log, cached.snapshot if cached else None)
        return self._adopt(files, cached, snapshot, extends)

    def _adopt(
        self, files: ProjectFiles, cached: _Cached | None, snapshot: Snapshot, extends: bool
    ) -> _Cached:
        """Cache ``snapshot`` with its view, reusing the cached view when the log only grew."""
        if cached is not None and snapshot is cached.snapshot:
            current = cached
        elif cached is not None and extends:
            start = len(cached.snapshot.entries)
            grown = snapshot.entries[start:]
            contents = None if cached.contents is None else cached.contents | {content_key(e) for e in grown}
            rows = [*cached.line_rows(), *range(start, len(snapshot.entries))]
            current = self._rotated(_Cached(snapshot, cached.view.extend(grown), contents, tuple(rows)))
        else:
            entries: Sequence[FixEntry] = snapshot.entries
            rows = None
            if should_rotate(len(entries), self.cap):  # lines a writer with slack left past the cap
                plan = plan_rotation(entries, self.cap)
                rows, entries = plan.kept_rows, plan.keep
            index = fixlog.read_index(files.index) if entries else None
            view = ProjectView(entries, index=index, regression_rule=self._rule)
            current = _Cached(snapshot, view, rows=None if rows is None else tuple(rows))
        self._remember(files.log, current)
        return current

    def _rotated(self, cached: _Cached) -> _Cached:
        """``cached`` with its view rotated to the cap (the rotation order is associative while no
        outcome changes, and a verdict rewrites the log: rotating the lines at once or one append at a
        time keeps the same entries)."""
        view = cached.view
        if not should_rotate(len(view.entries), self.cap):
            return cached
        keep = plan_rotation(view.entries, self.cap).kept_rows
        rows = cached.line_rows()
        return _Cached(cached.snapshot, view.subset(keep), None, tuple(rows[i] for i in keep))

    def _remember(self, path: Path, value: _Cached) -> None:
        """Keep ``value`` as the newest cache item; evict the least recently used beyond the bounds."""
        with self._cache_mutex:
            changed = self._cache.get(path) is not value
            self._cache[path] = value
            self._cache.move_to_end(path)
            if not changed:
                return
            total = sum(c.view.memory_bytes() for c in self._cache.values())
            while len(self._cache) > 1 and (len(self._cache) > CACHE_PROJECTS or total > self._cache_bytes):
                _, evicted = self._cache.popitem(last=False)
                total -= evicted.view.memory_bytes()

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

    def read(self, owner: str, project_key: str) -> ReadResult:
        """A project's entries as stored and its malformed lines (line number, reason); no lock taken.

        Raises InvalidKey for an empty owner or project key, StoreUnavailable when the log is unreadable.
        """
        cached = self._load(self._files(owner, project_key))
        snapshot = cached.snapshot
        return ReadResult(list(cached.view.entries), snapshot.malformed, incomplete_tail=bool(snapshot.tail))

    def recall(
        self,
        owner: str,
        project_key: str,
        query: str,
        *,
        files: Sequence[str] | None = None,
        errors: Sequence[str] | None = None,
        k: int = 5,
        workspace: str | None = None,
        now: float | None = None,
        known_commits: Collection[str] | None = None,
        weights: RankingWeights | None = None,
    ) -> list[Recalled]:
        """Up to ``k`` past fixes relevant to the query, best first, redacted; ``[]`` when none is relevant.

        ``files`` and ``errors`` boost entries that touched the same files or hit the same errors;
        ``workspace`` normalizes absolute paths and marks entries whose files are gone; ``known_commits``
        marks entries whose commit is gone. ``now``: unix seconds (default: the clock).
        Raises InvalidKey, StoreUnavailable.
        """
        view = self._load(self._files(owner, project_key)).view
        return recall_view(
            view,
            query,
            files=files,
            errors=errors,
            k=k,
            workspace=workspace,
            known_commits=known_commits,
            now=self._clock() if now is None else now,
            weights=weights or self.weights,
        )

    def stats(self, owner: str, project_key: str) -> Stats:
        """Counts, ratios, top tags, superseded, regressed, malformed, oldest/newest ts and bytes."""
        return self._stats_of(project_key, self._load(self._files(owner, project_key)))

    @staticmethod
    def _stats_of(project_key: str, cached: _Cached) -> Stats:
        view = cached.view
        identity = cached.snapshot.identity
        return compute_stats(
            canonical_key(project_key),  # what the log stores: a secret in the key is not echoed
            view.entries,
            malformed=cached.snapshot.malformed,
            superseded=view.superseded,
            regressed=view.regressed,
            size_bytes=identity.size if identity else 0,
        )

    def lineage(self, owner: str, project_key: str, entry_id: str) -> list[FixEntry]:
        """The supersession chain through ``entry_id``, oldest first, redacted; ``[]`` for an unknown id."""
        view = self._load(self._files(owner, project_key)).view
        chain = lineage(view.entries, entry_id, view.superseded)  # by the turns' time (``store.lineage``)
        return [view.redacted(view.rows[e.id]) for e in chain]

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

    def projects(self, owner: str) -> list[str]:
        """The raw project keys of ``owner`` that hold at least one entry, sorted.

        Read from the summary files (``summaries``): no log is parsed while they hold.
        """
        return sorted({s.project for s in self.summaries(owner) if s.project is not None})

    def summary(self, owner: str, project_key: str) -> LogSummary:
        """A project's ``LogSummary`` (``EMPTY_SUMMARY`` when it has no log). Raises InvalidKey,
        StoreUnavailable."""
        return self._summary(self._files(owner, project_key))

    def summaries(self, owner: str) -> list[LogSummary]:
        """The ``LogSummary`` of each of ``owner``'s projects that holds an entry, by project key.

        Each comes from memory or the project's summary file while the log still holds the bytes it was
        made of (one open, fstat and pread of the log); else the log is parsed and summarized again, and
        the file rewritten (``store.persist.summary_file``). Raises InvalidKey, StoreUnavailable.
        """
        found = [self._summary(files) for files in self._owner_logs(owner)]
        return sorted((s for s in found if s.total), key=lambda s: s.project or "")

    def _summary(self, files: ProjectFiles) -> LogSummary:
        with self._cache_mutex:
            memo = self._summaries.get(files.log)
        if memo is not None and memo[0].holds(files.log):
            return memo[1]
        found = read_summary(files.summary, files.log)
        if found is None:  # none yet (an older store wrote the log), stale, or torn: the log decides
            cached = self._cached(files)
            snapshot, _ = fixlog.read_snapshot(files.log, cached.snapshot if cached else None)
            stamp = Stamp.of(snapshot)
            if stamp is None:
                return EMPTY_SUMMARY
            entries = snapshot.entries
            if should_rotate(len(entries), self.cap):  # a writer with slack left lines past the cap
                entries = tuple(plan_rotation(entries, self.cap).keep)
            found = (stamp, summarize(entries))
            self._save_summary(files, *found, writer=False)
        self._memo_summary(files.log, *found)
        return found[1]

    def _memo_summary(self, log: Path, stamp: Stamp, summary: LogSummary) -> None:
        with self._cache_mutex:
            if len(self._summaries) >= 4096:
                self._summaries.clear()
            self._summaries[log] = (stamp, summary)

    def _summary_before(self, files: ProjectFiles, cached: _Cached) -> LogSummary:
        """The summary of ``cached`` (a parse under the lock): the one in memory when it is of the same
        bytes, else computed from its entries."""
        stamp = Stamp.of(cached.snapshot)
        with self._cache_mutex:
            memo = self._summaries.get(files.log)
        if memo is not None and memo[0] == stamp:
            return memo[1]
        return summarize(cached.view.entries)

    def _save_summary(self, files: ProjectFiles, stamp: Stamp, summary: LogSummary, *, writer: bool) -> None:
        """Write the summary file; on any error log it and remove the file (a reader then summarizes the
        log again). Never raises: the log write it follows has succeeded and must be reported so."""
        try:
            write_summary(files.summary, stamp, summary)
        except Exception as exc:
            _log.log(
                logging.WARNING if writer else logging.DEBUG,
                "fix store: could not write %s (%s); removed, the log will be summarized again",
                files.summary, exc,
            )  # fmt: skip
            with contextlib.suppress(OSError):
                files.summary.unlink()

    def _keep_summary(self, files: ProjectFiles, snapshot: Snapshot, make: Callable[[], LogSummary]) -> None:
        """Under the lock, after the log was written: remember the summary ``make()`` gives of ``snapshot``
        and write it. Never raises (see ``_save_summary``)."""
        try:
            stamp = Stamp.of(snapshot)
            if stamp is None:
                return
            summary = make()
        except Exception:
            _log.warning("fix store: could not summarize %s", files.log, exc_info=True)
            with contextlib.suppress(OSError):
                files.summary.unlink()
            return
        self._memo_summary(files.log, stamp, summary)
        self._save_summary(files, stamp, summary, writer=True)

    def has_project(self, owner: str, project_key: str) -> bool:
        """Whether ``owner`` has a log for ``project_key`` (one ``stat``; it may hold no entry any more).

        Raises InvalidKey for an empty owner or project key.
        """
        return self._files(owner, project_key).log.exists()

    def project_stats(self, owner: str) -> list[Stats]:
        """The ``Stats`` of each of ``owner``'s projects that holds an entry, by project key.

        Each log is parsed once and then served from the cache while it is unchanged (a listing on a warm
        store reads no file but the directory). Raises InvalidKey, StoreUnavailable.
        """
        listed = []
        for files in self._owner_logs(owner):
            cached = self._load(files)
            if cached.view.entries:
                listed.append(self._stats_of(cached.view.entries[0].project, cached))
        return sorted(listed, key=lambda s: s.project)

    # -- writing -------------------------------------------------------------------------------------

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

    def append(self, owner: str, project_key: str, entries: Sequence[FixEntry]) -> AppendResult:
        """Append a batch to a project's log: one write and one fsync, whole lines, under the lock.

        Ids already present are skipped, ids ``forget`` deleted are refused (``store.persist.forgotten``); new
        entries are redacted, reconciled by meaning (``supersedes``) and the log is rotated to ``cap`` (one
        atomic rewrite instead of the append). The index is refreshed.
        Raises InvalidKey, InvalidEntry (an entry of another project; nothing written), StoreUnavailable
        (naming the path; the log is left as it was).
        """
        canonical = canonical_key(project_key)
        for entry in entries:
            if entry.project not in (project_key, canonical):  # extraction stores the redacted key
                raise InvalidEntry(
                    f"entry {entry.id} is for project {redact(entry.project)!r}, not {canonical!r}"
                )
            try:
                fixlog.encode_entry(entry)
            except TypeError as exc:  # orjson refuses lone surrogates: such text cannot be a JSON line
                raise InvalidEntry(f"entry {entry.id} holds text that is not valid UTF-8: {exc}") from exc
        files = self._files(owner, project_key)
        ensure_dir(files.directory)
        with self._lock(owner, project_key, files):
            return self._append_locked(files, entries)

    def _prepare(self, files: ProjectFiles) -> tuple[_Cached, int]:
        """Under the lock: the re-validated parse with a torn tail repaired, and lines quarantined.

        Temp files of rewrites killed midway (a worker SIGKILLed in a rotation) are deleted here.
        """
        remove_stale_temps(files.log)
        remove_stale_temps(files.index)
        cached = self._cached(files)
        snapshot, extends, moved = fixlog.prepare_for_write(
            files.log, files.quarantine, cached.snapshot if cached else None, now=self._clock()
        )
        return self._adopt(files, cached, snapshot, extends), moved

    def _append_locked(self, files: ProjectFiles, entries: Sequence[FixEntry]) -> AppendResult:
        current, quarantined = self._prepare(files)
        snapshot, view = current.snapshot, current.view
        seen = set(view.rows)  # the log's entries at the cap (lines past it are no entries of it)
        refused = read_forgotten(files.forgotten)
        contents = current.content_keys()  # not changed here: a write that fails must leave it as it was
        batch: set[bytes | None] = set()
        duplicates: list[str] = []
        forgotten: list[str] = []
        same_content: list[str] = []
        fresh: list[FixEntry] = []
        for entry in entries:
            if entry.id in seen:
                duplicates.append(entry.id)
                continue
            seen.add(entry.id)
            if entry.id in refused:
                forgotten.append(entry.id)
                continue
            redacted = _redacted(entry)
            content = content_key(redacted)
            if content is not None and (content in contents or content in batch):
                same_content.append(entry.id)
                continue
            batch.add(content)
            fresh.append(redacted)
        if not fresh:
            if quarantined:  # the repair changed the log
                self._keep_summary(files, snapshot, lambda: summarize(view.entries))
            return AppendResult([], duplicates, [], quarantined, forgotten, same_content)
        new_vectors = embed_many([meaning_tokens(e) for e in fresh])
        added = reconcile(
            view.entries,
            view.vectors,
            fresh,
            new_vectors=new_vectors,
            live=view.live,
            existing_files=view.file_sets,
            row_of=view.rows,
        )
        grown = view.extend(added, new_vectors=new_vectors)
        dropped: list[FixEntry] = []
        rows: Sequence[int] = range(len(grown.entries))
        if should_rotate(len(grown.entries), self.cap):
            plan = plan_rotation(grown.entries, self.cap)
            dropped, rows = plan.drop, plan.kept_rows
        # Rotation with slack: the lines stay on disk until the log would hold more than cap + slack (or a
        # new entry has the id of a line past the cap: a replayed turn rotation dropped); readers rotate.
        past_cap = snapshot.ids.difference(view.rows) if len(snapshot.entries) > len(view.entries) else set()
        lines = len(snapshot.entries) + len(added)
        if lines > self.cap + self.slack or any(e.id in past_cap for e in added):
            raws = [*current.raw_lines(), *(fixlog.encode_entry(e) for e in added)]
            keep = [(grown.entries[i], raws[i]) for i in rows]
            snapshot, moved = fixlog.rewrite(files.log, files.quarantine, snapshot, keep, now=self._clock())
            quarantined += moved
            line_rows: list[int] | None = None
        else:
            start = len(snapshot.entries)
            snapshot = fixlog.append_entries(files.log, snapshot, added)
            every = [*current.line_rows(), *range(start, start + len(added))]
            line_rows = [every[i] for i in rows]
        if dropped:
            grown = grown.subset(rows)
            known = None  # entries left the log: its keys are computed again at the next append
            kept = grown.entries
            self._keep_summary(files, snapshot, lambda: summarize(kept))
        else:
            known = contents | batch
            self._keep_summary(files, snapshot, lambda: self._summary_before(files, current).extended(added))
        whole = line_rows is None or len(line_rows) == len(snapshot.entries)
        self._remember(files.log, _Cached(snapshot, grown, known, None if whole else tuple(line_rows or ())))
        fixlog.write_index(files.index, grown.index_bytes())
        return AppendResult(added, duplicates, dropped, quarantined, forgotten, same_content)

    def apply_verdicts(self, owner: str, project_key: str, verdicts: Sequence[Verdict]) -> list[Judged]:
        """Apply verdicts to a project's entries by precedence (``store.verdicts``), one per input, in order.

        Idempotent: a verdict in effect, or one a higher verdict outranks, changes nothing. One atomic
        rewrite under the lock when any line changes (details are redacted). Raises InvalidKey,
        StoreUnavailable.
        """
        files = self._files(owner, project_key)
        if not files.log.exists():
            refused = read_forgotten(files.forgotten)
            return [Judged(v, "forgotten" if v.entry_id in refused else "missing") for v in verdicts]
        verdicts = [v if not might_hold_secret(v.detail) else _redacted_verdict(v) for v in verdicts]
        with self._lock(owner, project_key, files):
            current, _ = self._prepare(files)
            entries = list(current.view.entries)
            rows = current.view.rows
            changed: set[int] = set()
            for verdict in verdicts:
                row = rows.get(verdict.entry_id)
                judged = None if row is None else judge(entries[row], verdict)
                if row is not None and judged is not None:
                    entries[row] = judged
                    changed.add(row)
            if changed:
                raws = current.raw_lines()
                keep = [
                    (e, fixlog.encode_entry(e) if i in changed else raws[i]) for i, e in enumerate(entries)
                ]
                snapshot, _ = fixlog.rewrite(
                    files.log, files.quarantine, current.snapshot, keep, now=self._clock()
                )
                self._keep_summary(files, snapshot, lambda: summarize(entries))
                self._adopt(files, None, snapshot, False)
            refused = read_forgotten(files.forgotten)
        out = []
        for verdict in verdicts:
            row = rows.get(verdict.entry_id)
            if row is None:
                out.append(Judged(verdict, "forgotten" if verdict.entry_id in refused else "missing"))
            else:
                out.append(Judged(verdict, state_of(entries[row], verdict), agent_outcome(entries[row])))
        return out

    def forget(self, owner: str, entry_id: str) -> bool:
        """Delete entry ``entry_id`` from whichever of ``owner``'s projects holds it; False if none does.

        An atomic rewrite per project that held it (malformed lines move to quarantine); the index is
        refreshed. The id is recorded as forgotten first (``store.persist.forgotten``), so replaying its turn
        does not write it back. Never touches another owner's files. Raises InvalidKey, StoreUnavailable.
        """
        if not owner:
            raise InvalidKey("owner must not be empty")
        if not _ID_RE.match(entry_id):
            return False
        deleted = False
        for files in list(self._owner_logs(owner)):
            listed = self._load(files).view
            if entry_id not in listed.rows:
                continue
            project_key = listed.entries[listed.rows[entry_id]].project
            with self._lock(owner, project_key, files):
                current, _ = self._prepare(files)
                rows = [i for i, e in enumerate(current.view.entries) if e.id != entry_id]
                if len(rows) == len(current.view.entries):
                    continue
                add_forgotten(files.forgotten, entry_id)
                raws = current.raw_lines()
                keep = [(current.view.entries[i], raws[i]) for i in rows]
                snapshot, _ = fixlog.rewrite(
                    files.log, files.quarantine, current.snapshot, keep, now=self._clock()
                )
                view = current.view.subset(rows)
                self._keep_summary(files, snapshot, partial(summarize, view.entries))
                self._remember(files.log, _Cached(snapshot, view))
                fixlog.write_index(files.index, view.index_bytes())
                deleted = True
        return deleted

    def repair(self, owner: str, project_key: str, *, check: bool = False) -> Repaired:
        """Under the lock: repair a torn tail, put the lines in time order with the ``supersedes`` links
        decided by the turns' time (``store.persist.repair``; one atomic rewrite, only when one changes),
        and rewrite the index and summary. ``check``: only say what would change (no lock, no write).

        Raises InvalidKey, StoreUnavailable.
        """
        files = self._files(owner, project_key)
        if not files.log.exists():
            return Repaired()
        if check:
            cached = self._load(files)
            plan = plan_relink(cached.view.entries, cached.raw_lines(), cached.view.superseded)
            return Repaired(moved=plan.moved, relinked=plan.relinked)
        with self._lock(owner, project_key, files):
            current, quarantined = self._prepare(files)
            view = current.view
            plan = plan_relink(view.entries, current.raw_lines(), view.superseded)
            written = bool(plan.moved or plan.relinked)
            if written:
                snapshot, moved = fixlog.rewrite(
                    files.log, files.quarantine, current.snapshot, plan.keep, now=self._clock()
                )
                quarantined += moved
                current = self._adopt(files, None, snapshot, False)
            fixlog.write_index(files.index, current.view.index_bytes())
            self._keep_summary(files, current.snapshot, lambda: self._summary_before(files, current))
            return Repaired(quarantined, plan.moved, plan.relinked, written)
