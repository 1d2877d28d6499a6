"""The ``fixmem`` command: one entry point, one subcommand per job."""

from __future__ import annotations

from collections.abc import Sequence

import click

from fixmem.api_cli import mcp_command, serve_command, tool_schema_command
from fixmem.backfill_cli import backfill_command
from fixmem.bench_cli import bench_command
from fixmem.errors import run_group
from fixmem.eval_cli import eval_command
from fixmem.eval_extraction import eval_extraction_command
from fixmem.memory_cli import forget_command, recall_command, stats_command
from fixmem.notes_cli import export, import_, notes
from fixmem.pipeline_cli import ingest_command, up_command, worker_command
from fixmem.stream_cli import dead_letters_group, publish_command, status_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fixmem")
def cli() -> None:
    """Fix memory for coding agents."""


# The pipeline (issue 4): run it, feed it, watch it, query it.
for _command in (
    up_command,
    ingest_command,
    worker_command,
    publish_command,
    status_command,
    dead_letters_group,
    recall_command,
    stats_command,
    forget_command,
):
    cli.add_command(_command)
cli.add_command(notes)
cli.add_command(export)
cli.add_command(import_)
cli.add_command(eval_extraction_command)
cli.add_command(eval_command)
cli.add_command(backfill_command)  # issue 6: replay old agent logs
# Agents and dashboards (issue 5): the HTTP API and /metrics, the recall_fixes tool, MCP.
cli.add_command(serve_command)
cli.add_command(tool_schema_command)
cli.add_command(mcp_command)
cli.add_command(bench_command)  # issue 7: the benchmark suite of a checkout (python -m bench)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting (tests call this in-process)."""
    return run_group(cli, argv)
