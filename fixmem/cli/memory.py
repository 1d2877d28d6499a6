"""``fixmem recall``, ``fixmem stats``, ``fixmem forget``: the fix memory from a terminal."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from fixmem import service, wiring
from fixmem.cli.options import data_dir_option, load_settings, owner_option, redis_url_option, require_owner
from fixmem.errors import CliError, ExitCode
from fixmem.limits import DEFAULT_K, MAX_K
from store import FixStore
from store.catalog import nearest_first
from store.paths import canonical_key
from store.summary import LogSummary

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
LISTED_PROJECTS = 10  # an unknown project's error names at most this many known ones


def require_project(store: FixStore, owner: str, project: str) -> None:
    """Nothing when ``owner`` has a log for ``project``; else CliError (exit 66) naming the project, the
    data directory and the owner's projects, nearest first: a mistyped key is not "nothing relevant"."""
    if store.has_project(owner, project):
        return
    where = store.root
    known = [canonical_key(p) for p in store.projects(owner)]
    if not known:
        raise CliError(
            f"unknown project {canonical_key(project)!r}: owner {owner!r} has no project in {where} "
            "(check --owner/FIXMEM_OWNER and --data-dir/FIXMEM_DATA_DIR; `fixmem projects` lists them)",
            ExitCode.NOT_FOUND,
        )
    nearest = nearest_first(canonical_key(project), known)
    more = (
        f" (and {len(nearest) - LISTED_PROJECTS} more: `fixmem projects`)"
        if len(nearest) > LISTED_PROJECTS
        else ""
    )
    raise CliError(
        f"unknown project {canonical_key(project)!r} for owner {owner!r} in {where}; "
        f"known, nearest first: {', '.join(nearest[:LISTED_PROJECTS])}{more}",
        ExitCode.NOT_FOUND,
    )


@click.command("recall")
@click.argument("query")
@owner_option
@project_option
@click.option("--file", "files", multiple=True, help="A file the task is about (repeatable).")
@click.option(
    "--weight",
    "weights",
    multiple=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="How sure the --file of the same position is, in (0, 1]: 1 known, under 1 a guess (repeatable: "
    "one per --file, or none).",
)
@click.option("--reason", "reasons", multiple=True, help="Why that --file was guessed (one per --weight).")
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
    weights: tuple[float, ...],
    reasons: tuple[str, ...],
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
    try:
        service.check_weights(files, weights or None, reasons or None)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    settings = load_settings(data_dir=data_dir, owner=owner, project=project)
    owner = require_owner(settings)
    store = wiring.make_store(settings, None)  # reading takes no lock
    project = settings.project_key(workspace)
    require_project(store, owner, project)
    question = service.Question(query, files, errors, k, workspace, weights or None, reasons=reasons or None)
    budget = settings.fix_memory_prompt_budget_tokens
    _print_found(
        service.recall(store, owner, project, question, budget_tokens=budget, now=time.time()), as_json
    )


def _print_found(found: service.Recall, as_json: bool) -> None:
    """What ``fixmem recall`` prints: the block (or the recalled entries and it as JSON)."""
    if as_json:
        payload = {"recalled": [r.to_dict() for r in found.recalled], "prompt_block": found.block}
        click.echo(json.dumps(payload, indent=2))
    elif found.block:
        click.echo(found.block)
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
    settings = load_settings(data_dir=data_dir, owner=owner, project=project)
    owner = require_owner(settings)
    project = settings.project_key(workspace)
    store = wiring.make_store(settings, None)
    require_project(store, owner, project)
    stats = store.stats(owner, project)
    click.echo(json.dumps(stats.to_dict(), indent=None if as_json else 2))


def _last_activity(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def projects_table(listed: list[LogSummary]) -> str:
    """The projects as an aligned text table: key, fixes, outcome shares, last activity."""
    header = ("project", "fixes", "fixed", "partial", "unverified", "last activity")
    rows = [
        (
            s.project or "",
            str(s.total),
            *(f"{s.ratios[o]:.0%}" for o in ("fixed", "partial", "unverified")),
            _last_activity(s.newest_ts),
        )
        for s in listed
    ]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in (header, *rows)
    ]
    return "\n".join(line.rstrip() for line in lines)


@click.command("projects")
@owner_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@data_dir_option
def projects_command(*, owner: str | None, as_json: bool, data_dir: Path | None) -> None:
    """List the owner's projects: fixes, outcome ratios, last activity."""
    settings = load_settings(data_dir=data_dir, owner=owner)
    owner = require_owner(settings)
    store = wiring.make_store(settings, None)
    listed = store.summaries(owner)  # the summary files: no log parsed while they hold
    if as_json:
        click.echo(json.dumps({"owner": owner, "projects": [project_summary(s) for s in listed]}, indent=2))
    elif listed:
        click.echo(projects_table(listed))
    else:
        click.echo(f"(owner {owner!r} has no project in {store.root})", err=True)


def project_summary(stats: LogSummary) -> dict[str, object]:
    """One project of the listing as JSON: key, counts, ratios, first and last activity (unix seconds)."""
    return {
        "project": stats.project,
        "total": stats.total,
        "by_outcome": stats.by_outcome,
        "ratios": stats.ratios,
        "oldest_ts": stats.oldest_ts,
        "newest_ts": stats.newest_ts,
    }


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
