"""``fixmem publish``, ``fixmem status``, ``fixmem dead-letters``: the streams seen from a terminal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any, BinaryIO

import click
import orjson

from fixmem import wiring
from fixmem.cli.options import load_settings, redis_url_option
from fixmem.errors import CliError, ExitCode
from ingest import dead_letters
from ingest.errors import InvalidEvent
from ingest.publish import encode_event, publish_many
from workers.counters import read_counters

PUBLISH_CHUNK = 1000  # events per round trip


def _lines(source: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their 1-based numbers."""
    for number, line in enumerate(source, start=1):
        if line.strip():
            yield number, line.strip()


@click.command("publish")
@click.argument("source", type=click.File("rb"))
@click.option("--backfill", is_flag=True, help="Publish to the backfill stream (processed after live turns).")
@redis_url_option
def publish_command(source: BinaryIO, backfill: bool, redis_url: str | None) -> None:
    """Publish turn events from a JSONL FILE (or - for stdin), one event per line.

    Invalid lines are reported with their line number and not sent; the others are published.
    Exit 65 when any line was refused.
    """
    settings = load_settings(redis_url=redis_url)
    client = wiring.redis_client(settings)
    stream = settings.backfill_stream if backfill else settings.stream
    published = refused = 0
    chunk: list[bytes] = []
    for number, raw in _lines(source):
        try:
            chunk.append(encode_event(raw, max_bytes=settings.max_event_bytes))
        except InvalidEvent as exc:
            refused += 1
            click.echo(f"line {number}: {exc.reason.value}: {exc.message}", err=True)
            continue
        if len(chunk) >= PUBLISH_CHUNK:
            published += len(publish_many(client, chunk, stream=stream, max_bytes=settings.max_event_bytes))
            chunk = []
    if chunk:
        published += len(publish_many(client, chunk, stream=stream, max_bytes=settings.max_event_bytes))
    click.echo(f"published {published} events to {stream}" + (f", refused {refused}" if refused else ""))
    if refused:
        raise click.exceptions.Exit(int(ExitCode.DATA_ERROR))


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@redis_url_option
def status_command(as_json: bool, redis_url: str | None) -> None:
    """Show streams (length, pending, lag), queues, failed jobs, dead letters and the fleet counters."""
    settings = load_settings(redis_url=redis_url)
    client = wiring.redis_client(settings)
    status = wiring.pipeline_status(client, settings)
    counters = read_counters(client)
    if as_json:
        value = {
            "redis": wiring.resolve_redis_url(settings),
            **status.to_json(),
            "counters": asdict(counters),
        }
        click.echo(json.dumps(value, indent=2, sort_keys=True))
        return
    out = Lines()
    silent = f" ({status.silent_workers} silent: stopped or killed)" if status.silent_workers else ""
    out.write(f"redis    {wiring.resolve_redis_url(settings)}   workers alive: {status.workers}{silent}\n")
    for s in status.streams:
        lag = f"{s.lag}" if s.lag_exact else f"<= {s.lag} (estimate: Redis 6.2 cannot count it cheaply)"
        out.write(
            f"stream   {s.stream}: {s.length} entries, group {s.group}: pending {s.pending}, lag {lag}"
            + ("" if s.group_exists else " (no consumer has started yet)")
            + "\n"
        )
        for c in s.consumers:
            out.write(f"           consumer {c.name}: pending {c.pending}, idle {c.idle_seconds:.0f}s\n")
    for q in status.queues:
        out.write(
            f"queue    {q.name}: {q.queued} queued, {q.started} running, {q.scheduled} waiting to retry, "
            f"{q.failed} failed\n"
        )
    out.write(f"dead     {settings.dead_stream}: {status.dead_letters} dead letters\n")
    out.write(f"events   {_pairs(counters.events)}\n")
    out.write(f"entries  {_pairs(counters.entries)}\n")
    out.write(f"dropped  {_pairs(counters.rotation_dropped)} (rotation)\n")
    if any(counters.dead_letters.values()):
        out.write(f"refused  {_pairs({k: v for k, v in counters.dead_letters.items() if v})}\n")
    if counters.verdicts:
        out.write(f"verdicts {_pairs(dict(sorted(counters.verdicts.items())))} (source|outcome|result)\n")
    if any(counters.unlinked.values()):
        out.write(f"unlinked {_pairs(dict(sorted(counters.unlinked.items())))} (link verdicts not applied)\n")
    out.write(f"pipeline {_pairs(counters.pipeline)}\n")
    out.echo()


class Lines:
    """Collects output lines, echoed at the end of the command."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        self.lines.append(text)

    def echo(self) -> None:
        click.echo("".join(self.lines), nl=False)


def _pairs(values: dict[str, int] | Any) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items()) or "-"


_LETTER_ID = re.compile(r"(\d{1,20})-(\d{1,20})")


def _letter_ids(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Check dead-letter ids as ``list`` prints them (``<ms>-<seq>``, each < 2**64; "-" for --after)."""
    for text in value if isinstance(value, tuple) else (value,):
        match = _LETTER_ID.fullmatch(text)
        if not (match and all(int(part) < 2**64 for part in match.groups())) and text != param.default:
            raise click.BadParameter(
                f"{text!r} is not a dead-letter id: expected <ms>-<seq> such as 1700000000000-0"
            )
    return value


@click.group("dead-letters")
def dead_letters_group() -> None:
    """List, show, replay or purge refused events (the dead-letter stream)."""


@dead_letters_group.command("list")
@click.option("--reason", default=None, help="Only this reason (e.g. invalid_json).")
@click.option("--count", type=click.IntRange(1), default=50, show_default=True)
@click.option("--after", callback=_letter_ids, default="-", help="Start after this dead-letter id.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@redis_url_option
def dl_list(reason: str | None, count: int, after: str, as_json: bool, redis_url: str | None) -> None:
    """List dead letters, oldest first: id, reason, origin, error."""
    settings = load_settings(redis_url=redis_url)
    client = wiring.redis_client(settings)
    letters = dead_letters.list_letters(client, settings.dead_stream, count=count, after=after, reason=reason)
    for letter in letters:
        if as_json:
            click.echo(json.dumps(letter.summary()))
        else:
            click.echo(
                f"{letter.id}  {letter.reason:<20} {letter.origin_stream}#{letter.origin_id}  {letter.error}"
            )
    if not as_json:
        click.echo(
            f"({len(letters)} shown, {client.xlen(settings.dead_stream)} in {settings.dead_stream})", err=True
        )


SHOW_PAYLOAD_CHARS = 20_000  # of a dead letter's payload on the terminal, head and tail


def clip(text: str, limit: int) -> str:
    """``text`` whole when it has at most ``limit`` characters, else its head and tail around a marker
    that says how much was left out and how to see it all (pure)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    left_out = len(text) - 2 * half
    return f"{text[:half]}\n[... {left_out:,} characters left out: --full shows them all ...]\n{text[-half:]}"


@dead_letters_group.command("show")
@click.argument("letter_id", callback=_letter_ids)
@click.option(
    "--full",
    is_flag=True,
    help=f"The whole payload (default: its first and last {SHOW_PAYLOAD_CHARS // 2:,} characters).",
)
@redis_url_option
def dl_show(letter_id: str, full: bool, redis_url: str | None) -> None:
    """Show one dead letter with its payload (pretty JSON when it parses; clipped unless --full)."""
    settings = load_settings(redis_url=redis_url)
    client = wiring.redis_client(settings)
    letter = dead_letters.get_letter(client, settings.dead_stream, letter_id)
    if letter is None:
        raise CliError(f"no dead letter {letter_id} in {settings.dead_stream}", ExitCode.NOT_FOUND)
    click.echo(json.dumps(letter.summary(), indent=2))
    if letter.payload is not None:
        try:
            payload = json.dumps(orjson.loads(letter.payload), indent=2, ensure_ascii=False)
        except orjson.JSONDecodeError:
            payload = letter.payload.decode("utf-8", "backslashreplace")
        click.echo(payload if full else clip(payload, SHOW_PAYLOAD_CHARS))


def _selected(
    client: Any, stream: str, ids: tuple[str, ...], everything: bool
) -> list[dead_letters.DeadLetter]:
    if everything == bool(ids):
        raise click.UsageError("give dead-letter ids or --all (not both)")
    if everything:
        return list(dead_letters.iter_letters(client, stream))
    found = []
    for letter_id in ids:
        letter = dead_letters.get_letter(client, stream, letter_id)
        if letter is None:
            raise CliError(f"no dead letter {letter_id} in {stream}", ExitCode.NOT_FOUND)
        found.append(letter)
    return found


@dead_letters_group.command("replay")
@click.argument("ids", nargs=-1, callback=_letter_ids)
@click.option("--all", "everything", is_flag=True, help="Replay every dead letter.")
@click.option("--to", "target", default=None, help="Publish to this stream instead of each letter's origin.")
@click.option("--no-validate", is_flag=True, help="Re-publish even payloads that still do not validate.")
@redis_url_option
def dl_replay(
    ids: tuple[str, ...], everything: bool, target: str | None, no_validate: bool, redis_url: str | None
) -> None:
    """Re-publish dead letters (after a fix) and remove them from the dead-letter stream."""
    settings = load_settings(redis_url=redis_url)
    client = wiring.redis_client(settings)
    letters = _selected(client, settings.dead_stream, ids, everything)
    result = dead_letters.replay(
        client,
        settings.dead_stream,
        letters,
        target=target,
        validate=not no_validate,
        max_bytes=settings.max_event_bytes,
    )
    for letter_id, error in result.still_invalid.items():
        click.echo(f"{letter_id}: still invalid, kept: {error}", err=True)
    for letter_id in result.no_payload:
        click.echo(f"{letter_id}: has no payload to replay, kept", err=True)
    click.echo(f"replayed {len(result.replayed)}, kept {len(result.still_invalid) + len(result.no_payload)}")
    if result.still_invalid or result.no_payload:
        raise click.exceptions.Exit(int(ExitCode.DATA_ERROR))


@dead_letters_group.command("purge")
@click.argument("ids", nargs=-1, callback=_letter_ids)
@click.option("--all", "everything", is_flag=True, help="Delete every dead letter.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation with --all.")
@redis_url_option
def dl_purge(ids: tuple[str, ...], everything: bool, yes: bool, redis_url: str | None) -> None:
    """Delete dead letters for good."""
    settings = load_settings(redis_url=redis_url)
    client = wiring.redis_client(settings)
    if everything == bool(ids):
        raise click.UsageError("give dead-letter ids or --all (not both)")
    if everything and not yes:
        click.confirm(f"delete all {client.xlen(settings.dead_stream)} dead letters?", abort=True)
    removed = dead_letters.purge(client, settings.dead_stream, None if everything else ids)
    click.echo(f"purged {removed}")
