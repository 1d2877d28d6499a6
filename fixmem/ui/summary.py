"""The projects page's rows: each project's stats and outcome chart, cached while its log is unchanged."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from markupsafe import Markup

from fixmem.ui.chart import Chart, outcome_chart
from store import FixStore, Stats
from store.paths import owner_dir


@dataclass(frozen=True)
class ProjectRow:
    """A row of the projects page."""

    stats: Stats
    chart: Chart | None
    html: Markup  # the row as the page shows it (``_project_row.html``, autoescaped), drawn once


class ProjectRows:
    """Each project's row, computed and drawn again only when its log changed: counting 200 logs of 500
    entries on every view took 0.5 s, drawing their rows in the template 0.13 s; a view that finds them
    unchanged copies 200 cached lists and joins 200 strings (bench/ui.py).

    A log's version is (entries, first id, last id, malformed lines): the store's writes append at the
    end (the last id changes) or remove lines (the count changes), so any write gives a new version.
    """

    LIMIT: Final = 20_000  # rows kept, all owners together; all dropped past it

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], tuple[tuple[object, ...], ProjectRow]] = {}
        self._keys: dict[str, tuple[int, list[str]]] = {}
        self._mutex = threading.Lock()

    def keys(self, store: FixStore, owner: str) -> list[str]:
        """``store.projects(owner)``, again only when the owner's directory changed (a new log appears
        there, and every rewrite renames a file into it): it opens every log to learn its key."""
        try:
            stamp = owner_dir(store.root, owner).stat().st_mtime_ns
        except FileNotFoundError:
            return []
        except OSError:
            return store.projects(owner)  # it raises StoreUnavailable, naming the directory
        with self._mutex:
            cached = self._keys.get(owner)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        found = store.projects(owner)
        with self._mutex:
            if len(self._keys) >= self.LIMIT:
                self._keys.clear()
            self._keys[owner] = (stamp, found)
        return found

    def of(
        self, store: FixStore, owner: str, draw: Callable[[Stats, Chart | None], Markup]
    ) -> list[ProjectRow]:
        """The rows of ``owner``'s projects that hold an entry, each drawn by ``draw`` (stats, chart).

        Raises StoreError.
        """
        rows = []
        for key in self.keys(store, owner):
            read = store.read(owner, key)
            if not read.entries:
                continue
            version = (len(read.entries), read.entries[0].id, read.entries[-1].id, len(read.malformed))
            with self._mutex:
                cached = self._rows.get((owner, key))
            if cached is not None and cached[0] == version:
                rows.append(cached[1])
                continue
            stats = store.stats(owner, key)
            chart = outcome_chart(read.entries)
            row = ProjectRow(stats, chart, draw(stats, chart))
            with self._mutex:
                if len(self._rows) >= self.LIMIT:
                    self._rows.clear()
                self._rows[(owner, key)] = (version, row)
            rows.append(row)
        return rows
