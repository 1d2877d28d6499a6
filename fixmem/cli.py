"""The ``fixmem`` command: one entry point, one subcommand per job."""

from __future__ import annotations

from collections.abc import Sequence

import click

from fixmem.eval_cli import eval_command
from fixmem.eval_extraction import eval_extraction_command
from fixmem.notes_cli import export, import_, notes


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fixmem")
def cli() -> None:
    """Fix memory for coding agents."""


cli.add_command(notes)
cli.add_command(export)
cli.add_command(import_)
cli.add_command(eval_extraction_command)
cli.add_command(eval_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting (tests call this in-process)."""
    try:
        cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    return 0
