"""Counts of a project and listings of an owner's projects: ``stats``, the summary files, ``projects``.

The summary file (``store.persist.summary_file``) is kept here too: every write path calls
``_keep_summary`` under the project's lock after the log, and never fails for it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from store.api.core import Cached
from store.api.learning import Learning
from store.paths import ProjectFiles, canonical_key
from store.persist import fixlog
from store.persist.fixlog import Snapshot
from store.persist.rotation import plan_rotation, should_rotate
from store.persist.summary_file import Stamp, read_summary, write_summary
from store.stats import Stats, compute_stats
from store.summary import EMPTY_SUMMARY, LogSummary, summarize

_log = logging.getLogger("store.api")


class Summaries(Learning):
    """``stats``, ``project_stats``, ``has_project``, ``projects``, ``summary``, ``summaries``."""

    def stats(self, owner: str, project_key: str) -> Stats:
        """Counts, ratios, top tags, superseded, regressed, malformed, oldest/newest ts and bytes."""
        return self._stats_of(project_key, self._load(self._files(owner, project_key)))

    @staticmethod
    def _stats_of(project_key: str, cached: Cached) -> Stats:
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

    def _summary_before(self, files: ProjectFiles, cached: Cached) -> LogSummary:
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
