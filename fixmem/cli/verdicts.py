"""``fixmem verdicts``: verdicts from sources that know a commit, not a turn (``scan-git``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
import orjson

from fixmem import wiring
from fixmem.cli.options import load_settings, owner_option, redis_url_option, require_owner
from fixmem.errors import CliError, ExitCode
from fixmem.settings import Settings

if TYPE_CHECKING:
    from ingest.verdicts.scan import ScanConfig, ScanResult


@click.group("verdicts")
def verdicts_group() -> None:
    """Verdicts from where truth lives: git's reverts and merges (scan-git)."""


@verdicts_group.command("scan-git")
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="A git checkout (or bare repository) to scan.",
)
@click.option(
    "--since",
    default="30d",
    show_default=True,
    help="The window: an age (30d, 12h) or a date (2025-01-31); commits before it are not read.",
)
@click.option("--branch", default=None, help="The default branch (default: origin/HEAD, else main/master).")
@owner_option
@click.option(
    "--project", default=None, help="The project key (default: FIXMEM_PROJECT, else the key of --repo)."
)
@click.option(
    "--dry-run", is_flag=True, help="Print what would be published; publish nothing, move no cursor."
)
@click.option("--json", "as_json", is_flag=True, help="Print the scan as JSON (with the verdict events).")
@redis_url_option
def scan_git_command(
    *,
    repo: Path,
    since: str,
    branch: str | None,
    owner: str | None,
    project: str | None,
    dry_run: bool,
    as_json: bool,
    redis_url: str | None,
) -> None:
    """Publish git's verdicts: a reverted fix is `partial` (source revert), a landed one `fixed` (merged).

    Reverts: by git's "This reverts commit" line or by content (a later diff undoes the fix's); landed: on
    the default branch by sha, or by patch-id or content (squash merges). Each verdict names its commit
    (the `link` form). A cursor per repository in Redis keeps a second run from publishing again. Exit 65:
    no git repository or a verdict refused; 69: Redis cannot be reached.
    """
    from ingest.errors import GitError, InvalidEvent, PublishError  # noqa: PLC0415 - only when it runs
    from ingest.verdicts.scan import scan  # noqa: PLC0415

    settings = load_settings(redis_url=redis_url, owner=owner, project=project)
    config = _config(settings, repo=repo, since=since, branch=branch, dry_run=dry_run)
    client = wiring.redis_client(settings) if not dry_run or _redis_configured(settings) else None
    try:
        result = scan(client, config)
    except GitError as exc:
        raise CliError(str(exc), ExitCode.DATA_ERROR) from exc
    except InvalidEvent as exc:
        raise CliError(f"verdict refused: {exc.message}", ExitCode.DATA_ERROR) from exc
    except PublishError as exc:
        raise CliError(str(exc), ExitCode.REDIS_UNAVAILABLE) from exc
    if as_json:
        click.echo(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(_summary(result, config.project_key))


def _config(settings: Settings, *, repo: Path, since: str, branch: str | None, dry_run: bool) -> ScanConfig:
    """The scan's options: the window parsed (exit 2 when it is not a date or an age), owner, project key."""
    from ingest.backfill.plan import parse_since  # noqa: PLC0415
    from ingest.backfill.records import BackfillError  # noqa: PLC0415
    from ingest.verdicts.scan import ScanConfig  # noqa: PLC0415

    try:
        window = parse_since(since, now=time.time())
    except BackfillError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from exc
    return ScanConfig(
        repo=repo, owner=require_owner(settings), project_key=settings.project_key(repo.resolve()),
        since=window, branch=branch, dry_run=dry_run, stream=settings.stream,
    )  # fmt: skip


def _summary(result: ScanResult, key: str) -> str:
    """The one line a scan prints: what it read, found, already had, published."""
    found = ", ".join(f"{n} {name}" for name, n in sorted(result.found.items())) or "nothing"
    done = f"would publish {len(result.events)}" if result.dry_run else f"published {result.published}"
    return (
        f"{result.repo} ({key}, {result.branch} at {result.head[:12]}): {result.commits} commits"
        f" + {result.branch_commits} on other branches; found {found};"
        f" {result.known} already published; {done}"
    )


def _redis_configured(settings: Settings) -> bool:
    """Whether a dry run can read the cursor (a Redis URL is set or ``fixmem up`` runs)."""
    return wiring.resolve_redis_url(settings) is not None
