"""The projects page's rows: each project's summary and outcome chart, drawn again only when it changed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from markupsafe import Markup

from fixmem.ui.chart import Chart, outcome_chart
from store import FixStore
from store.summary import LogSummary


@dataclass(frozen=True)
class ProjectRow:
    """A row of the projects page."""

    summary: LogSummary
    chart: Chart | None
    html: Markup  # the row as the page shows it (``_project_row.html``, autoescaped), drawn once


class ProjectRows:
    """Each project's row, drawn again only when its summary changed.

    The numbers come from ``FixStore.summaries``: the store keeps each log's ``LogSummary`` in a file
    beside it, so a cold page reads 200 small files instead of parsing 200 logs (18 s at 200 × 500
    entries, bench/ui.py). Drawing 200 rows in the template took 0.13 s, so the drawn rows are kept
    here too, by owner and project, and reused while the summary is equal.
    """

    LIMIT: Final = 20_000  # rows kept, all owners together; all dropped past it

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], ProjectRow] = {}
        self._mutex = threading.Lock()

    def of(
        self, store: FixStore, owner: str, draw: Callable[[LogSummary, Chart | None], Markup]
    ) -> list[ProjectRow]:
        """The rows of ``owner``'s projects that hold an entry, each drawn by ``draw`` (summary, chart).

        Raises StoreError.
        """
        rows = []
        for summary in store.summaries(owner):
            key = (owner, summary.project or "")
            with self._mutex:
                cached = self._rows.get(key)
            if cached is not None and cached.summary == summary:
                rows.append(cached)
                continue
            chart = outcome_chart(summary.days)
            row = ProjectRow(summary, chart, draw(summary, chart))
            with self._mutex:
                if len(self._rows) >= self.LIMIT:
                    self._rows.clear()
                self._rows[key] = row
            rows.append(row)
        return rows
