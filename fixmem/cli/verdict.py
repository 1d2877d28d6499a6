"""``fixmem verdict``: publish a later verdict on a recorded turn (a CI job, a benchmark, a reviewer)."""

from __future__ import annotations

import click

from fixmem import wiring
from fixmem.cli.options import load_settings, owner_option, redis_url_option, require_owner
from fixmem.errors import CliError, ExitCode
from ingest.schema import VERDICT_SOURCES


@click.command("verdict")
@click.option("--event-id", default="", help="The judged turn's event_id (what the harness published).")
@click.option("--entry-id", default="", help="The judged turn's entry id (fix-…, as `recall --json` shows).")
@click.option(
    "--outcome",
    type=click.Choice(["fixed", "partial", "unverified"]),
    required=True,
    help="fixed: the fix held; partial: it did not; unverified: the judge could not tell.",
)
@click.option(
    "--source",
    type=click.Choice(VERDICT_SOURCES),
    required=True,
    help="Who judged (precedence revert > review > ci > benchmark > merged > the agent's own tests).",
)
@click.option("--detail", default="", help="What the judge saw, one line (a CI run URL, a test summary).")
@click.option(
    "--ts", type=float, default=None, help="When, unix seconds (default: now); a source's latest wins."
)
@owner_option
@click.option(
    "--project",
    default=None,
    help="The turn's project key (default: FIXMEM_PROJECT, else the key of the current directory).",
)
@redis_url_option
def verdict_command(
    *,
    event_id: str,
    entry_id: str,
    outcome: str,
    source: str,
    detail: str,
    ts: float | None,
    owner: str | None,
    project: str | None,
    redis_url: str | None,
) -> None:
    """Publish a verdict on a recorded turn: whether its fix held, by CI, a benchmark, a review, a revert.

    Name the turn with --event-id or --entry-id. The worker applies it to the turn's entry by precedence
    (a verdict before its turn waits for it, 7 days by default). Exit 2 without either id, 65 when a field
    is refused, 69 when Redis cannot be reached.
    """
    from ingest.errors import InvalidEvent, PublishError  # noqa: PLC0415 - pydantic: only when it runs
    from ingest.publish import publish_verdict  # noqa: PLC0415

    if not event_id and not entry_id:
        raise CliError("name the judged turn: pass --event-id or --entry-id", ExitCode.USAGE)
    settings = load_settings(redis_url=redis_url, owner=owner, project=project)
    who = require_owner(settings)
    key = settings.project_key()
    client = wiring.redis_client(settings)
    try:
        stream_id = publish_verdict(
            client, owner=who, project_key=key, outcome=outcome, source=source, event_id=event_id,
            entry_id=entry_id, detail=detail, ts=ts, stream=settings.stream,
        )  # fmt: skip
    except InvalidEvent as exc:
        raise CliError(f"verdict refused: {exc.message}", ExitCode.DATA_ERROR) from exc
    except PublishError as exc:
        raise CliError(str(exc), ExitCode.REDIS_UNAVAILABLE) from exc
    click.echo(f"published verdict {source}:{outcome} on {entry_id or event_id} ({key}) as {stream_id}")
