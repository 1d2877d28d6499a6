"""``fixmem schema``: the JSON Schema of a v1 event, turn or verdict (``ingest.schema_doc``)."""

from __future__ import annotations

import json

import click


@click.command("schema")
@click.option(
    "--kind",
    type=click.Choice(["turn", "verdict"]),
    default="turn",
    show_default=True,
    help="Which event: a turn (what a harness publishes) or a verdict (what CI or a benchmark publishes).",
)
def schema_command(kind: str) -> None:
    """Print the JSON Schema of the v1 turn event (what a harness publishes)."""
    from ingest import schema_doc  # noqa: PLC0415 - pydantic: only when it runs

    schema = (
        schema_doc.verdict_event_json_schema() if kind == "verdict" else schema_doc.turn_event_json_schema()
    )
    click.echo(json.dumps(schema, indent=2, ensure_ascii=False))
