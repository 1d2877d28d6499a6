"""``fixmem verdicts``: verdicts from sources that know a commit, not a turn (``scan-git``)."""

from __future__ import annotations

import time
from pathlib import Path

import click
import orjson

from fixmem import wiring
from fixmem.cli.options import load_settings, owner_option, redis_url_option, require_owner
from fixmem.errors import CliError, ExitCode
from fixmem.settings import Settings


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

    Reverts are found by git's "This reverts commit" line or by content (a later commit whose diff undoes
    the fix's); a commit landed on the default branch by sha, or by patch-id or content (squash merges) for
    branch commits. Each verdict names its commit (the `link` form); the worker links it to the turns.
    A cursor per repository in Redis keeps a second run from publishing anything again. Exit 65 when the
    directory is no git repository or a verdict is refused, 69 when Redis cannot be reached.
    """
    from ingest.backfill.plan import parse_since  # noqa: PLC0415 - only when it runs
    from ingest.backfill.records import BackfillError  # noqa: PLC0415
    from ingest.errors import GitError, InvalidEvent, PublishError  # noqa: PLC0415
    from ingest.verdicts.scan import ScanConfig, scan  # noqa: PLC0415

    try:
        window = parse_since(since, now=time.time())
    except BackfillError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from exc
    settings = load_settings(redis_url=redis_url, owner=owner, project=project)
    who = require_owner(settings)
    key = settings.project_key(repo.resolve())
    config = ScanConfig(repo=repo, owner=who, project_key=key, since=window, branch=branch, dry_run=dry_run,
                        stream=settings.stream)  # fmt: skip
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
        return
    found = ", ".join(f"{n} {name}" for name, n in sorted(result.found.items())) or "nothing"
    verb = "would publish" if dry_run else "published"
    click.echo(
        f"{result.repo} ({key}, {result.branch} at {result.head[:12]}): {result.commits} commits"
        f" + {result.branch_commits} on other branches; found {found}; {result.known} already published;"
        f" {verb} {len(result.events) if dry_run else result.published}"
    )


def _redis_configured(settings: Settings) -> bool:
    """Whether a dry run can read the cursor (a Redis URL is set or ``fixmem up`` runs)."""
    return wiring.resolve_redis_url(settings) is not None
