"""``fixmem schema``: the JSON Schema of the v1 turn event (``ingest.schema_doc``)."""

from __future__ import annotations

import json

import click


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the v1 turn event (what a harness publishes)."""
    from ingest.schema_doc import turn_event_json_schema  # noqa: PLC0415 - pydantic: only when it runs

    click.echo(json.dumps(turn_event_json_schema(), indent=2, ensure_ascii=False))
