"""How each fix was used in agent sessions (``store.usage``): the usage file every write keeps, and the
multipliers recall applies when the store learns from use.

The usage is derived from the entries the log holds (at the cap), like the summary: writers recount it
under the project's lock after the log and write ``<project>.usage.json``; a reader uses it (from
memory, or the file while its stamp holds for the log) and recounts it when it is missing or stale.
Log lines are never rewritten for it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from store.api.core import Cached, StoreCore
from store.entry import FixEntry
from store.paths import ProjectFiles
from store.persist.fixlog import Snapshot
from store.persist.summary_file import Stamp
from store.persist.usage_file import read_usage, write_usage
from store.usage import Learned, Usage, learned, usage_of

_log = logging.getLogger("store.api")


class Learning(StoreCore):
    """``usage``, the usage file and the learned multipliers of recall."""

    def usage(self, owner: str, project_key: str) -> Usage:
        """Each fix's use in ``memory`` sessions of the project (``store.usage.FixUse`` by entry id).

        Raises InvalidKey, StoreUnavailable."""
        files = self._files(owner, project_key)
        return self._usage(files, self._load(files))

    def _usage(self, files: ProjectFiles, cached: Cached) -> Usage:
        """The usage of ``cached``: from memory, else the usage file while it is of these bytes, else
        counted from the entries (and the file written again; never raises for it)."""
        stamp = Stamp.of(cached.snapshot)
        if stamp is None:
            return {}
        with self._cache_mutex:
            memo = self._usages.get(files.log)
        if memo is not None and memo[0] == stamp:
            return memo[1]
        found = read_usage(files.usage, stamp)
        if found is None:
            found = usage_of(cached.view.entries)
            self._save_usage(files, stamp, found, writer=False)
        self._memo_usage(files, stamp, found)
        return found

    def _learned(self, files: ProjectFiles, cached: Cached) -> Learned | None:
        """The multipliers recall applies to ``cached``'s view (None: learning off, or nothing learned)."""
        if not self.learn_from_use:
            return None
        with self._cache_mutex:
            memo = self._learned_memo.get(files.log)
        if memo is not None and memo[0] is cached.view:
            return memo[1]
        view = cached.view
        found = learned([e.id for e in view.entries], self._usage(files, cached), self.learn_params)
        with self._cache_mutex:
            self._learned_memo[files.log] = (view, found)
        return found

    def _memo_usage(self, files: ProjectFiles, stamp: Stamp, usage: Usage) -> None:
        with self._cache_mutex:
            if len(self._usages) >= 4096:
                self._usages.clear()
                self._learned_memo.clear()
            self._usages[files.log] = (stamp, usage)

    def _save_usage(self, files: ProjectFiles, stamp: Stamp, usage: Usage, *, writer: bool) -> None:
        """Write the usage file; on any error log it and remove the file (a reader then counts again).
        Never raises: the log write it follows has succeeded."""
        try:
            write_usage(files.usage, stamp, usage)
        except Exception as exc:
            level = logging.WARNING if writer else logging.DEBUG
            _log.log(level, "fix store: could not write %s (%s); removed, counted again", files.usage, exc)
            with contextlib.suppress(OSError):
                files.usage.unlink()

    def _keep_usage(
        self,
        files: ProjectFiles,
        snapshot: Snapshot,
        entries: Sequence[FixEntry],
        *,
        same_as: Snapshot | None = None,
    ) -> None:
        """Under the lock, after the log was written: count the usage of ``entries`` (what ``snapshot``
        holds at the cap), remember it and write it. ``same_as``: the log before a write that cannot have
        changed the usage (entries without a session record appended, none dropped); its usage is reused
        when known. Never raises."""
        try:
            stamp = Stamp.of(snapshot)
            if stamp is None:
                return
            with self._cache_mutex:
                memo = self._usages.get(files.log)
            known = same_as is not None and memo is not None and memo[0] == Stamp.of(same_as)
            usage = memo[1] if known and memo is not None else usage_of(entries)
        except Exception:
            _log.warning("fix store: could not count the usage of %s", files.log, exc_info=True)
            with contextlib.suppress(OSError):
                files.usage.unlink()
            return
        self._memo_usage(files, stamp, usage)
        self._save_usage(files, stamp, usage, writer=True)
