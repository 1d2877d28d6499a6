"""``fixmem eval``: run the recall-quality evaluation against the real store and print the figures."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from fixmem.eval_dataset import DatasetError, load_dataset
from fixmem.eval_recall import (
    FLOORS,
    GOALS,
    EvalReport,
    QueryScore,
    Split,
    Summary,
    run_eval,
    shortfalls,
)

DEFAULT_DATASET = Path(__file__).resolve().parent.parent / "evals" / "recall"
RET_BAD_DATASET = 2
RET_BELOW_FLOORS = 3
_SPLITS: dict[str, Split | None] = {"all": None, "tune": "tune", "held_out": "held_out"}

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


class BadDataset(click.ClickException):
    """Raised when the dataset directory is missing or invalid."""

    exit_code = RET_BAD_DATASET


class BelowFloors(click.ClickException):
    """Raised by ``--check`` when the figures are under the floors."""

    exit_code = RET_BELOW_FLOORS


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


def render_text(report: EvalReport) -> str:
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


@click.command("eval")
@click.option("--json", "as_json", is_flag=True, help="Print the full report (every query) as JSON.")
@click.option(
    "--dataset",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATASET,
    show_default=True,
    envvar="FIXMEM_EVAL_DATASET",
    help="The labelled dataset directory (projects/*.toml, queries/*.toml).",
)
@click.option(
    "--split",
    type=click.Choice(["all", "tune", "held_out"]),
    default="all",
    show_default=True,
    help="Evaluate every query, or only the tuning or held-out half.",
)
@click.option("--check", is_flag=True, help=f"Exit with {RET_BELOW_FLOORS} when the floors are not met.")
def eval_command(as_json: bool, dataset: Path, split: str, check: bool) -> None:
    """Measure recall quality: MRR, hit@k, abstention on negative probes, leaks, block precision.

    Builds real stores from the dataset in a temporary directory (nothing of yours is touched) at a
    fixed time, asks every query, and reports per category and per tuning/held-out half.
    """
    try:
        labelled = load_dataset(dataset)
    except DatasetError as exc:
        raise BadDataset(str(exc)) from exc
    report = run_eval(labelled, only=_SPLITS[split])
    if as_json:
        click.echo(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_text(report))
    missed = shortfalls(report.overall, FLOORS)
    if check and missed:
        raise BelowFloors("recall quality is under the floors: " + "; ".join(missed))
