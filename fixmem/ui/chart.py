"""The outcome-over-time chart of a project: spans of days with their outcome counts, as SVG geometry. Pure.

It is drawn from the count of each outcome per UTC day (``store.summary.LogSummary.days``, kept by the
store beside each log), so the projects page reads no log: each bar is an equal span of whole days.

``svg`` draws what ``outcome_chart`` returns (a path per outcome, a ``<title>`` listing each bar), so the
page holds an inline SVG drawn by the server: no script, no chart library, no network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

from markupsafe import Markup

from store.entry import OUTCOMES

BUCKETS: Final = 12  # at most; a project active on fewer days has a bar per day
EPOCH: Final = date(1970, 1, 1)
WIDTH: Final = 240  # SVG user units; the CSS scales it
HEIGHT: Final = 40
GAP: Final = 2


@dataclass(frozen=True)
class Segment:
    """One outcome's part of a bar: where it is drawn, and how many entries it stands for."""

    outcome: str
    y: float
    height: float
    count: int


@dataclass(frozen=True)
class Bar:
    """One time bucket: its x, width, the dates it spans and its outcome segments (fixed at the bottom)."""

    x: float
    width: float
    start: str
    end: str
    total: int
    segments: tuple[Segment, ...]

    @property
    def title(self) -> str:
        """The tooltip: dates, then the count and share of each outcome."""
        parts = ", ".join(f"{s.outcome} {s.count} ({s.count / self.total:.0%})" for s in self.segments)
        span = self.start if self.start == self.end else f"{self.start} to {self.end}"
        count = f"{self.total} entr{'y' if self.total == 1 else 'ies'}"
        return f"{span}: {count}" + (f": {parts}" if parts else "")


@dataclass(frozen=True)
class Chart:
    """A project's bars over the SVG box ``width`` × ``height``, and the span's first and last day."""

    width: int
    height: int
    bars: tuple[Bar, ...]
    first: str
    last: str


def _date(day: int) -> str:
    return (EPOCH + timedelta(days=day)).isoformat()


def bucket_counts(days: Mapping[int, Sequence[int]], buckets: int) -> list[tuple[int, int, dict[str, int]]]:
    """``days`` (day number -> counts in ``OUTCOMES`` order) in ``min(buckets, days spanned)`` spans of
    whole days, from the first day to the last: (first day, last day, outcome counts) of each span."""
    if not days:
        return []
    lo, hi = min(days), max(days)
    span = hi - lo + 1
    n = min(buckets, span)
    counts: list[dict[str, int]] = [dict.fromkeys(OUTCOMES, 0) for _ in range(n)]
    for day, per_outcome in days.items():
        bucket = counts[(day - lo) * n // span]
        for outcome, count in zip(OUTCOMES, per_outcome, strict=True):
            bucket[outcome] += count
    # span i holds the days d with (d - lo) * n // span == i: from ceil(i * span / n) on
    return [(lo - (-i * span // n), lo - (-(i + 1) * span // n) - 1, c) for i, c in enumerate(counts)]


def outcome_chart(days: Mapping[int, Sequence[int]], *, buckets: int = BUCKETS) -> Chart | None:
    """Bars of outcome shares (each bar's height is 100 %) over equal spans of whole UTC days; None
    without entries. ``days``: ``LogSummary.days`` (day number -> counts by outcome)."""
    spans = bucket_counts(days, buckets)
    if not spans:
        return None
    slot = WIDTH / len(spans)
    bars = []
    for i, (first, last, bucket) in enumerate(spans):
        total = sum(bucket.values())
        segments = []
        y = float(HEIGHT)
        for outcome in OUTCOMES:
            count = bucket.get(outcome, 0)
            if not count:
                continue
            height = HEIGHT * count / total
            y -= height
            segments.append(Segment(outcome, round(y, 2), round(height, 2), count))
        bars.append(
            Bar(
                x=round(i * slot + GAP / 2, 2),
                width=round(max(slot - GAP, 1.0), 2),
                start=_date(first),
                end=_date(last),
                total=total,
                segments=tuple(segments),
            )
        )
    return Chart(WIDTH, HEIGHT, tuple(bars), _date(spans[0][0]), _date(spans[-1][1]))


def svg(chart: Chart | None) -> Markup:
    """``chart`` as an inline SVG: one path per outcome, one title listing the bars; ``""`` for None.

    Built once per log version and cached with the project's row (``fixmem.ui.summary``): the projects
    page of 200 projects spent most of its time drawing 200 × 12 bars of rectangles in the template. Only
    numbers, dates and outcome names go in, and the title is escaped all the same.
    """
    if chart is None:
        return Markup("")
    paths: dict[str, list[str]] = {outcome: [] for outcome in (*OUTCOMES, "none")}
    for bar in chart.bars:
        if not bar.segments:
            paths["none"].append(f"M{bar.x} {chart.height - 1}h{bar.width}v1h{-bar.width}z")
        for s in bar.segments:
            paths[s.outcome].append(f"M{bar.x} {s.y}h{bar.width}v{s.height}h{-bar.width}z")
    title = "\n".join(bar.title for bar in chart.bars if bar.total)
    drawn = "".join(
        f'<path class="o-{outcome}" d="{"".join(parts)}"></path>' for outcome, parts in paths.items() if parts
    )
    return Markup(
        '<svg class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{label}">'
        "<title>{title}</title>{drawn}</svg>"
        '<div class="axis"><span>{first}</span><span>{last}</span></div>'
    ).format(
        w=chart.width,
        h=chart.height,
        label=f"outcomes from {chart.first} to {chart.last}",
        title=title,
        drawn=Markup(drawn),  # noqa: S704 - numbers and class names only
        first=chart.first,
        last=chart.last,
    )
