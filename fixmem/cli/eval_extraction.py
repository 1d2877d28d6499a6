"""``fixmem eval-extraction PATH...``: score extraction on real agent logs (``evals.extraction``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from evals.extraction.score import evaluate_paths, render, report_json


@click.command("eval-extraction")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--labels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="JSON {instance: {outcome, evidence}}: the agent's own last test run, labelled by hand.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def eval_extraction_command(paths: tuple[Path, ...], labels: Path | None, as_json: bool) -> None:
    """Score extraction on real agent logs: files P/R, error provenance, outcome agreement."""
    label_map = json.loads(labels.read_text()) if labels else {}
    report = evaluate_paths(list(paths), label_map)
    if as_json:
        click.echo(json.dumps(report_json(report), indent=2, ensure_ascii=False))
    else:
        click.echo(render(report))
