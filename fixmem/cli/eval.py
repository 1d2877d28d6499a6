"""``fixmem eval``: run the recall-quality evaluation (``evals.recall``) and print the figures."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from evals.recall import DATASET
from evals.recall.dataset import DatasetError, load_dataset
from evals.recall.metrics import FLOORS, Split, shortfalls
from evals.recall.report import render_text
from evals.recall.run import run_eval
from fixmem.cli.options import load_settings
from fixmem.errors import CliError, ExitCode

_SPLITS: dict[str, Split | None] = {"all": None, "tune": "tune", "held_out": "held_out"}


@click.command("eval")
@click.option("--json", "as_json", is_flag=True, help="Print the full report (every query) as JSON.")
@click.option(
    "--dataset",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The labelled dataset directory (projects/*.toml, queries/*.toml; default: FIXMEM_EVAL_DATASET, "
    "else the one shipped with evals.recall).",
)
@click.option(
    "--split",
    type=click.Choice(["all", "tune", "held_out"]),
    default="all",
    show_default=True,
    help="Evaluate every query, or only the tuning or held-out half.",
)
@click.option(
    "--check", is_flag=True, help=f"Exit with {int(ExitCode.BELOW_FLOORS)} when the floors are not met."
)
def eval_command(as_json: bool, dataset: Path | None, split: str, check: bool) -> None:
    """Measure recall quality: MRR, hit@k, abstention on negative probes, leaks, block precision.

    Builds real stores from the dataset in a temporary directory (nothing of yours is touched) at a
    fixed time, asks every query, and reports per category and per tuning/held-out half.
    """
    dataset = dataset or load_settings().eval_dataset or DATASET
    try:
        labelled = load_dataset(dataset)
    except DatasetError as exc:
        raise CliError(str(exc), ExitCode.DATA_ERROR) from exc
    report = run_eval(labelled, only=_SPLITS[split])
    if as_json:
        click.echo(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_text(report))
    missed = shortfalls(report.overall, FLOORS)
    if check and missed:
        raise CliError("recall quality is under the floors: " + "; ".join(missed), ExitCode.BELOW_FLOORS)
