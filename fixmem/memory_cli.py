"""``fixmem recall``, ``fixmem stats``, ``fixmem forget``: the fix memory from a terminal."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from fixmem import wiring
from fixmem.errors import CliError, ExitCode
from fixmem.limits import DEFAULT_K, MAX_ERROR_CHARS, MAX_K, MAX_QUERY_CHARS
from fixmem.options import data_dir_option, load_settings, owner_option, redis_url_option, require_owner
from ingest.project_key import project_key_for
from store import fit_query, prompt_block

project_option = click.option(
    "--project",
    default=None,
    help="The project key of the events (default: the key of --workspace or the current directory: its "
    "origin remote as host/owner/repo, else its absolute path).",
)
workspace_option = click.option(
    "--workspace",
    default=None,
    help="The checkout (default: the current directory); marks fixes whose files are gone.",
)


@click.command("recall")
@click.argument("query")
@owner_option
@project_option
@click.option("--file", "files", multiple=True, help="A file the task is about (repeatable).")
@click.option("--error", "errors", multiple=True, help="An error message the task hit (repeatable).")
@click.option(
    "-k", type=click.IntRange(1, MAX_K), default=DEFAULT_K, show_default=True, help="At most this many fixes."
)
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="The recalled entries and the block as JSON.")
@data_dir_option
def recall_command(
    *,
    query: str,
    owner: str | None,
    project: str | None,
    files: tuple[str, ...],
    errors: tuple[str, ...],
    k: int,
    workspace: str | None,
    as_json: bool,
    data_dir: Path | None,
) -> None:
    """Print the "Past fixes in this project" block for QUERY (nothing when nothing is relevant).

    QUERY may be a whole issue text ("-" reads it from stdin); over 16,384 characters it is trimmed to its
    head and its code and traceback lines.
    """
    if query == "-":
        query = sys.stdin.read()
    query = fit_query(query, MAX_QUERY_CHARS)
    settings = load_settings(data_dir=data_dir, owner=owner)
    owner = require_owner(settings)
    store = wiring.make_store(settings, None)  # reading takes no lock
    project = project or project_key_for(workspace or os.getcwd())
    now = time.time()
    recalled = store.recall(
        owner,
        project,
        query,
        files=list(files),
        errors=[fit_query(e, MAX_ERROR_CHARS) for e in errors],
        k=k,
        workspace=workspace,
        now=now,
    )
    block = prompt_block(recalled, settings.fix_memory_prompt_budget_tokens, workspace=workspace, now=now)
    if as_json:
        click.echo(json.dumps({"recalled": [r.to_dict() for r in recalled], "prompt_block": block}, indent=2))
    elif block:
        click.echo(block)
    else:
        click.echo("(no relevant past fix)", err=True)


@click.command("stats")
@owner_option
@project_option
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@data_dir_option
def stats_command(
    *, owner: str | None, project: str | None, workspace: str | None, as_json: bool, data_dir: Path | None
) -> None:
    """Counts and ratios of a project's fix log."""
    settings = load_settings(data_dir=data_dir, owner=owner)
    owner = require_owner(settings)
    project = project or project_key_for(workspace or os.getcwd())
    stats = wiring.make_store(settings, None).stats(owner, project)
    click.echo(json.dumps(stats.to_dict(), indent=None if as_json else 2))


@click.command("forget")
@click.argument("entry_id")
@owner_option
@redis_url_option
@data_dir_option
def forget_command(*, entry_id: str, owner: str | None, redis_url: str | None, data_dir: Path | None) -> None:
    """Delete one entry (by id) from the owner's fix logs, under the same lock the workers take."""
    settings = load_settings(redis_url=redis_url, data_dir=data_dir, owner=owner)
    owner = require_owner(settings)
    if not wiring.writer_store(settings).forget(owner, entry_id):
        raise CliError(f"no entry {entry_id} for owner {owner}", ExitCode.NOT_FOUND)
    click.echo(f"forgot {entry_id}")
