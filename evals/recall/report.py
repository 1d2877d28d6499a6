"""The report of one recall-eval run: summaries overall, per split and per category; its JSON and text.

Pure: query scores in, a report out; the text rendering is what ``fixmem eval`` prints.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evals.recall.metrics import FLOORS, GOALS, QueryScore, Summary, shortfalls, summarize

_COLUMNS = (
    ("n", "queries", "{:>4}"),
    ("MRR", "mrr", "{:>6}"),
    ("hit@1", "hit_at_1", "{:>6}"),
    ("hit@5", "hit_at_5", "{:>6}"),
    ("R@5", "recall_at_5", "{:>6}"),
    ("nDCG@5", "ndcg_at_5", "{:>6}"),
    ("abstain", "abstention", "{:>7}"),
    ("leaks", "leaks", "{:>5}"),
    ("forbid", "forbidden_returned", "{:>6}"),
    ("block prec", "block_precision", "{:>10}"),
)


@dataclass(frozen=True)
class RecallReport:
    """The result of one run: summaries overall, per split and per category, and every query."""

    overall: Summary
    splits: dict[str, Summary]
    categories: dict[str, Summary]
    queries: tuple[QueryScore, ...]
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by ``fixmem eval --json``."""
        return {
            "info": self.info,
            "goals": asdict(GOALS),
            "floors": asdict(FLOORS),
            "meets_goals": not shortfalls(self.overall, GOALS),
            "meets_floors": not shortfalls(self.overall, FLOORS),
            "overall": self.overall.to_dict(),
            "splits": {name: s.to_dict() for name, s in self.splits.items()},
            "categories": {name: s.to_dict() for name, s in self.categories.items()},
            "queries": [
                {**asdict(q), "ranked": list(q.ranked), "scores": [round(s, 4) for s in q.scores]}
                for q in self.queries
            ],
        }


def build_report(scores: Sequence[QueryScore], info: Mapping[str, Any] | None = None) -> RecallReport:
    """Summaries overall, per split and per category (in first-seen order). Pure."""
    by_split: dict[str, list[QueryScore]] = defaultdict(list)
    by_category: dict[str, list[QueryScore]] = defaultdict(list)
    for score in scores:
        by_split[score.split].append(score)
        by_category[score.category].append(score)
    return RecallReport(
        overall=summarize(scores),
        splits={name: summarize(by_split[name]) for name in ("tune", "held_out") if name in by_split},
        categories={name: summarize(group) for name, group in by_category.items()},
        queries=tuple(scores),
        info=dict(info or {}),
    )


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _row(name: str, summary: Summary) -> str:
    values = summary.to_dict()
    cells = [fmt.format(_cell(values[key])) for _, key, fmt in _COLUMNS]
    return f"{name:<24}" + " ".join(cells)


def _miss(query: QueryScore) -> str | None:
    """A one-line account of a query that did not get a perfect answer, else None."""
    if query.kind == "positive" and (query.rr or 0.0) < 1.0:
        got = ", ".join(query.ranked) or "nothing"
        return f"  {query.id:<10} {query.category:<22} rr={query.rr or 0.0:.2f}  got: {got}"
    if query.abstained is False:
        return f"  {query.id:<10} {query.category:<22} should abstain, got: {', '.join(query.ranked)}"
    if query.leaks or query.forbidden_returned:
        return (
            f"  {query.id:<10} {query.category:<22} leaks={query.leaks} forbidden={query.forbidden_returned}"
        )
    return None


def render_text(report: RecallReport) -> str:
    """The human-readable report: summary rows, the bars, and every query that missed."""
    header = f"{'':<24}" + " ".join(fmt.format(title) for title, _, fmt in _COLUMNS)
    lines = [
        f"recall eval: {report.info.get('projects')} projects, {report.info.get('entries')} entries, "
        f"{report.info.get('queries')} queries (k={report.info.get('k')}, "
        f"budget {report.info.get('budget_tokens')} tokens)",
        header,
        _row("overall", report.overall),
        *(_row(f"split {name}", s) for name, s in report.splits.items()),
        *(_row(f"  {name}", s) for name, s in report.categories.items()),
        f"regressed flagged {report.overall.regressed_flagged}; stale marks right "
        f"{report.overall.stale_marked}",
    ]
    for name, bar in (("goals", GOALS), ("floors", FLOORS)):
        missed = shortfalls(report.overall, bar)
        lines.append(f"{name}: " + ("met" if not missed else "MISSED: " + "; ".join(missed)))
    misses = [m for m in map(_miss, report.queries) if m]
    if misses:
        lines.append(f"queries that missed ({len(misses)}):")
        lines.extend(misses)
    return "\n".join(lines)
