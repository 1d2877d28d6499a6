"""``fixmem bench``: run the benchmark suite (``python -m bench``) of a source checkout.

The suite lives in the repository's ``bench/`` folder, next to the packages; it is not installed with
them, so this command needs a checkout (an editable install, as the README's commands make).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from fixmem.errors import ExitCode

CHECKOUT = Path(__file__).resolve().parents[2]  # fixmem/cli/bench.py -> the checkout


@click.command(
    "bench", context_settings={"ignore_unknown_options": True, "help_option_names": []}, add_help_option=False
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench_command(args: tuple[str, ...]) -> int:
    """Run every benchmark (results in bench/results/); arguments go to `python -m bench` (try --help)."""
    if not (CHECKOUT / "bench" / "suite.py").is_file():
        click.echo(f"fixmem bench needs a source checkout: no bench/ next to {CHECKOUT / 'fixmem'}", err=True)
        return int(ExitCode.USAGE)
    return subprocess.call([sys.executable, "-m", "bench", *args], cwd=CHECKOUT)
