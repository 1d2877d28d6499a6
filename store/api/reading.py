"""Reading a project: its entries, recall, and a fix's lineage. No lock taken, nothing written but a
rebuilt index (``StoreCore._adopt``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from store.api.learning import Learning
from store.entry import FixEntry
from store.history import lineage
from store.localize import Localized
from store.persist.fixlog import MalformedLine
from store.recall.ranking import RankingWeights
from store.recall.search import Recalled, recall_view


@dataclass(frozen=True)
class ReadResult:
    """A project's valid entries (log order), its malformed lines, and whether a write seemed underway."""

    entries: list[FixEntry]
    malformed: list[MalformedLine]
    incomplete_tail: bool = False  # bytes after the last newline (a write in progress, or torn)


class Reading(Learning):
    """``read``, ``recall``, ``lineage``."""

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
        localized: Sequence[Localized] | None = None,
    ) -> list[Recalled]:
        """Up to ``k`` past fixes relevant to the query, best first, redacted; ``[]`` when none is relevant.

        ``files`` and ``errors`` boost entries that touched the same files or hit the same errors;
        ``workspace`` normalizes absolute paths and marks entries whose files are gone; ``known_commits``
        marks entries whose commit is gone. ``localized``: workspace mode, the files of the checkout the task
        text names (``store.localize``; None: no checkout index, text only; ``()``: it names none), which
        count as known files weighted by how sure they are. ``now``: unix
        seconds (default: the clock). When the store learns from use, each fix's strength is multiplied
        by what its use says (``store.usage``); with the meaning signal (``store.meaning``), a text-only
        query may get the fixes just under the floor whose request means the same.
        Raises InvalidKey, StoreUnavailable.
        """
        project = self._files(owner, project_key)
        cached = self._load(project)
        text_only = self.meaning is not None and not files and not errors
        return recall_view(
            cached.view,
            query,
            files=files,
            errors=errors,
            k=k,
            workspace=workspace,
            known_commits=known_commits,
            now=self._clock() if now is None else now,
            weights=weights or self.weights,
            learned=self._learned(project, cached),
            meaning=self.meaning.cosines(cached.view.entries, query) if text_only and self.meaning else None,
            localized=localized,
        )

    def lineage(self, owner: str, project_key: str, entry_id: str) -> list[FixEntry]:
        """The supersession chain through ``entry_id``, oldest first, redacted; ``[]`` for an unknown id."""
        view = self._load(self._files(owner, project_key)).view
        chain = lineage(view.entries, entry_id, view.superseded)  # by the turns' time (``store.lineage``)
        return [view.redacted(view.rows[e.id]) for e in chain]
