"""``python -m fixmem.cli.children ingest|worker …``: the pipeline's processes, without the rest of the CLI.

``fixmem up`` starts its children this way: the same commands as ``fixmem ingest`` / ``fixmem worker``,
but without importing every other subcommand (the web API, the evaluations), so a crashed child is back
sooner.
"""

from __future__ import annotations

import sys

import click

from fixmem.cli.pipeline import ingest_command, worker_command
from fixmem.errors import run_group


@click.group()
def child() -> None:
    """The pipeline's processes (see ``fixmem ingest --help`` and ``fixmem worker --help``)."""


child.add_command(ingest_command)
child.add_command(worker_command)

if __name__ == "__main__":
    sys.exit(run_group(child))
