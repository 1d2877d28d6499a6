"""``fixmem verdict``: publish a later verdict on a recorded turn (a CI job, a benchmark, a reviewer), named
by its id or by what the judge knows (a commit, a session, files; JUnit reports of a CI run)."""

from __future__ import annotations

import json
from typing import Any

import click

from fixmem import wiring
from fixmem.cli.options import load_settings, owner_option, redis_url_option, require_owner
from fixmem.cli.verdict_link import build_link, junit_fields, link_options, resolve_commit
from fixmem.errors import CliError, ExitCode
from ingest.schema import VERDICT_SOURCES


@click.command("verdict")
@click.option("--event-id", default="", help="The judged turn's event_id (what the harness published).")
@click.option("--entry-id", default="", help="The judged turn's entry id (fix-…, as `recall --json` shows).")
@link_options
@click.option(
    "--outcome",
    type=click.Choice(["fixed", "partial", "unverified"]),
    default=None,
    help="fixed: the fix held; partial: it did not; unverified: the judge could not tell (--junit: "
    "from the reports).",
)
@click.option(
    "--source",
    type=click.Choice(VERDICT_SOURCES),
    default=None,
    help="Who judged (precedence revert > review > ci > benchmark > merged > the agent's own tests; "
    "--junit: ci).",
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
def verdict_command(**opts: Any) -> None:
    """Publish a verdict on a recorded turn: whether its fix held, by CI, a benchmark, a review, a revert.

    Name the turn with --event-id or --entry-id, or link it by what you know: --commit (its changed files
    and lines are read from git here), --session, --file; with --junit the reports of a CI run decide
    each linked entry (a failing test covering it: partial; none failing: fixed; failures elsewhere: no
    verdict). The worker applies it by precedence. Exit 2 on a usage error, 65 when a field or a report is
    refused, 66 for a missing report, 69 when Redis cannot be reached.
    """
    from ingest.errors import InvalidEvent, PublishError  # noqa: PLC0415 - pydantic: only when it runs
    from ingest.publish import publish_verdict  # noqa: PLC0415

    link, outcome, source, detail = _link_form(opts)
    settings = load_settings(redis_url=opts["redis_url"], owner=opts["owner"], project=opts["project"])
    if opts["print_body"]:
        _print_body(settings.project_key(), outcome, source, detail, link=link, opts=opts)
        return
    who, key = require_owner(settings), settings.project_key()
    client = wiring.redis_client(settings)
    try:
        stream_id = publish_verdict(
            client, owner=who, project_key=key, outcome=outcome, source=source, event_id=opts["event_id"],
            entry_id=opts["entry_id"], detail=detail, ts=opts["ts"], stream=settings.stream, link=link,
        )  # fmt: skip
    except InvalidEvent as exc:
        raise CliError(f"verdict refused: {exc.message}", ExitCode.DATA_ERROR) from exc
    except PublishError as exc:
        raise CliError(str(exc), ExitCode.REDIS_UNAVAILABLE) from exc
    target = opts["entry_id"] or opts["event_id"] or _describe(link)
    click.echo(f"published verdict {source}:{outcome} on {target} ({key}) as {stream_id}")


def _link_form(opts: dict[str, Any]) -> tuple[dict[str, Any] | None, str, str, str]:
    """The link (None without link options), the outcome, the source and the detail; raises CliError."""
    outcome, source, detail = opts["outcome"], opts["source"], opts["detail"]
    link = None
    if opts["commit"] or opts["session"] or opts["files"] or opts["junit"]:
        repo = opts["repo"]
        link = build_link(
            commit=resolve_commit(repo, opts["commit"]), branch=opts["branch"], session=opts["session"],
            files=opts["files"], since=opts["since"], until=opts["until"], repo=repo,
        )  # fmt: skip
    if bool(opts["event_id"] or opts["entry_id"]) == (link is not None):
        raise CliError(
            "name the judged turn: --event-id or --entry-id, or link it (--commit, --session, --file)",
            ExitCode.USAGE,
        )
    if opts["junit"]:
        assert link is not None
        tests, summary, failed = junit_fields(opts["junit"])
        link.update(tests)
        outcome = outcome or ("partial" if failed else "fixed")
        source = source or "ci"
        detail = " ".join(part for part in (f"junit: {summary}", detail) if part)
    if outcome is None or source is None:
        raise CliError("give --outcome and --source (or --junit reports)", ExitCode.USAGE)
    return link, outcome, source, detail


def _print_body(
    key: str, outcome: str, source: str, detail: str, *, link: dict[str, Any] | None, opts: dict[str, Any]
) -> None:
    """The verdict as ``POST /api/verdicts`` takes it (no owner: the token's), on stdout."""
    body: dict[str, Any] = {"project_key": key, "outcome": outcome, "source": source, "detail": detail}
    body.update({k: opts[k] for k in ("event_id", "entry_id", "ts") if opts[k]})
    if link is not None:
        body["link"] = link
    from ingest.errors import InvalidEvent  # noqa: PLC0415
    from ingest.schema import KIND_VERDICT, WIRE_VERSION, validate_any  # noqa: PLC0415

    try:  # the checks the API makes, but the owner (its token's)
        validate_any({"v": WIRE_VERSION, "kind": KIND_VERDICT, "owner": "-", "ts": 1.0, **body})
    except InvalidEvent as exc:
        raise CliError(f"verdict refused: {exc.message}", ExitCode.DATA_ERROR) from exc
    click.echo(json.dumps(body, ensure_ascii=False))


def _describe(link: dict[str, Any] | None) -> str:
    link = link or {}
    if link.get("commit"):
        return f"commit {str(link['commit'])[:12]}"
    if link.get("session_id"):
        return f"session {link['session_id']}"
    return f"{len(link.get('files', []))} files"
