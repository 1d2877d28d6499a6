"""``fixmem notes add|check|suggest|promote``, ``fixmem export`` and ``fixmem import``.

Adapters: the grammar, renderer, check report and review queue are ``store.notes`` (pure), the memory
file and git ``store.notes.workspace``; the export digest and the JSONL parsing are ``store.persist.export``.
Today's date is read here and nowhere else.

Exit codes (``fixmem.errors.ExitCode``): ``FAILURE`` when ``notes check`` found malformed lines, a file or
log cannot be read or written, a fix id is not found or already promoted, or an import file has invalid
lines (nothing imported); ``USAGE`` for usage errors (click), including a refused note (unknown kind,
empty subject).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Any

import click

from fixmem import wiring
from fixmem.cli.options import require_owner
from fixmem.errors import CliError, ExitCode
from fixmem.settings import Settings
from store import FixEntry, FixStore, StoreError
from store.history import regressions
from store.notes import (
    KINDS,
    MemoryFile,
    MemoryUnreadable,
    Note,
    NoteRejected,
    Suggestion,
    new_note,
    note_from_fix,
    promoted_ids,
    suggest_notes,
)
from store.notes.check import check_json, check_notes, check_text
from store.notes.promote import find_fix, promote_command, suggestion_lines
from store.notes.workspace import append_note, git_head, known_commits, memory_path, read_memory
from store.persist.export import ImportRefused, export_log, import_log

# -- commands ------------------------------------------------------------------------------------------


def _settings(ctx: click.Context) -> Settings:
    found = ctx.find_object(Settings)
    return found if found is not None else Settings.from_env()


def _workspace(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.is_dir():
        raise click.BadParameter(f"{value} is not a directory", param_hint="'--workspace'")
    return path.resolve()


def _store(ctx: click.Context, data_dir: str | None, *, writes: bool = False) -> FixStore:
    """The store of ``--data-dir`` (else the setting); ``writes``: with the workers' lock (``wiring``)."""
    settings = _settings(ctx)
    if data_dir:
        settings = settings.with_overrides(data_dir=Path(data_dir).expanduser())
    return wiring.writer_store(settings) if writes else wiring.make_store(settings, None)  # reads: no lock


def _memory(where: Path) -> MemoryFile | None:
    try:
        return read_memory(where)
    except MemoryUnreadable as exc:
        raise click.ClickException(str(exc)) from exc


def _append(where: Path, build: Callable[[], Note]) -> tuple[Note, int]:
    """Build a note (a refusal is a usage error) and append it; the note and its header line."""
    try:
        note = build()
    except NoteRejected as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        return note, append_note(where, note)
    except MemoryUnreadable as exc:
        raise click.ClickException(str(exc)) from exc


def _owner(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """``--owner``, else the owner setting (``FIXMEM_OWNER``, else the login name); exit 2 when none."""
    return value or require_owner(_settings(ctx))


def _workspace_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """``--workspace``, else the workspace setting (``FIXMEM_WORKSPACE``), else the current directory."""
    if value is not None:
        return value
    setting = _settings(ctx).workspace
    return "." if setting is None else str(setting)


owner_option = click.option(
    "--owner",
    default=None,
    callback=_owner,
    help="Whose fix logs (default: FIXMEM_OWNER, else your login name).",
)
data_dir_option = click.option(
    "--data-dir", default=None, help="The fixmem data directory (default: FIXMEM_DATA_DIR, else XDG)."
)
workspace_option = click.option(
    "--workspace",
    "-w",
    default=None,
    callback=_workspace_value,
    help="The repository whose .fixmem/memory.md to use (default: FIXMEM_WORKSPACE, else '.').",
)


@click.group("notes")
def notes() -> None:
    """Hand-written project memory in <workspace>/.fixmem/memory.md, reviewed in a diff."""


@notes.command("add")
@workspace_option
@click.option("--kind", "-k", required=True, help="gotcha, decision or convention.")
@click.option("--subject", "-s", required=True, help="One line: what the note is about.")
@click.option("--body", "-b", default="", help="Free text; '-' reads it from stdin.")
def add(workspace: str, kind: str, subject: str, body: str) -> None:
    """Append a note, stamped with today's date and the workspace's git HEAD."""
    where = _workspace(workspace)
    if body == "-":
        body = sys.stdin.read()
    head = git_head(where)
    note, line = _append(where, lambda: new_note(kind, subject, body, learned=date.today(), commit=head))
    click.echo(f"added {note.kind} {note.subject!r} at {memory_path(where)}:{line}")
    if head is None:
        click.echo(
            f"warning: {where} has no git HEAD; the note carries no commit and can never be marked stale",
            err=True,
        )


@notes.command("check")
@workspace_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def check(ctx: click.Context, workspace: str, fmt: str) -> None:
    """List notes, malformed lines and stale notes; exit 1 when anything is malformed (for CI)."""
    where = _workspace(workspace)
    path = memory_path(where)
    ceiling = _settings(ctx).notes_ceiling
    memory = _memory(where)
    known = known_commits(where) if memory is not None else frozenset()
    rows = check_notes(memory or MemoryFile(), known, ceiling)
    malformed = memory.malformed if memory is not None else ()
    if fmt == "json":
        click.echo(json.dumps(check_json(path, memory, rows, ceiling, checked=bool(known)), indent=2))
    else:
        for line, to_stderr in check_text(path, memory, rows, ceiling, checked=bool(known)):
            click.echo(line, err=to_stderr)
    if malformed:
        raise CliError(f"{len(malformed)} malformed line(s) in {path}", ExitCode.FAILURE)


# -- the review queue ------------------------------------------------------------------------------


@notes.command("suggest")
@click.option("--project", "-p", required=True, help="The project key whose fix log to read.")
@owner_option
@data_dir_option
@workspace_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def suggest(
    ctx: click.Context, *, project: str, owner: str, data_dir: str | None, workspace: str, fmt: str
) -> None:
    """Propose notes from the fix log (fixes that did not hold, errors fixed 3 times). Writes nothing."""
    store = _store(ctx, data_dir)
    memory = _memory(_workspace(workspace)) or MemoryFile()
    try:
        entries = store.read(owner, project).entries
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    found = suggest_notes(entries, regressed=regressions(entries), already_promoted=promoted_ids(memory))
    if fmt == "json":
        click.echo(json.dumps([asdict(s) for s in found], indent=2))
        return
    data = str(Path(data_dir).expanduser().resolve()) if data_dir else None
    where = str(_workspace(workspace)) if workspace != "." else None

    def command(item: Suggestion) -> str:
        return promote_command(
            item.fix_id, item.kind, project=project, owner=owner, data_dir=data, workspace=where
        )

    for line in suggestion_lines(found, project, len(entries), command):
        click.echo(line)


def _find_fix(store: FixStore, owner: str, project: str | None, fix_id: str) -> FixEntry:
    try:
        found = find_fix(store, owner, project, fix_id)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    if found is None:
        where = f"project {project!r}" if project is not None else f"any project of {owner!r}"
        raise click.ClickException(f"no fix {fix_id} in {where}")
    return found


@notes.command("promote")
@click.argument("fix_id")
@click.option("--kind", "-k", required=True, help=f"One of: {', '.join(KINDS)}.")
@click.option("--subject", "-s", default=None, help="One line (default: the fix's task).")
@click.option("--project", "-p", default=None, help="The project holding the fix (default: search all).")
@owner_option
@data_dir_option
@workspace_option
@click.pass_context
def promote(
    ctx: click.Context,
    *,
    fix_id: str,
    kind: str,
    subject: str | None,
    project: str | None,
    owner: str,
    data_dir: str | None,
    workspace: str,
) -> None:
    """Turn a fix a person chose into a note in the memory file (stamped today, the fix's commit)."""
    where = _workspace(workspace)
    entry = _find_fix(_store(ctx, data_dir), owner, project, fix_id)
    memory = _memory(where) or MemoryFile()
    if fix_id in promoted_ids(memory):
        line = next(n.line for n in memory.notes if fix_id in n.body)
        raise click.ClickException(f"{fix_id} is already promoted: {memory_path(where)}:{line}")
    commit = entry.commit or git_head(where)
    note, line = _append(
        where, lambda: note_from_fix(entry, kind, learned=date.today(), commit=commit, subject=subject)
    )
    click.echo(f"promoted {fix_id} as {note.kind} {note.subject!r} at {memory_path(where)}:{line}")


# -- export and import ---------------------------------------------------------------------------------


@click.command("export")
@click.option("--project", "-p", required=True, help="The project key whose fix log to export.")
@click.option(
    "--format", "fmt", type=click.Choice(["markdown", "jsonl"]), default="markdown", show_default=True
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, writable=True), default="-", show_default=True
)
@owner_option
@data_dir_option
@click.pass_context
def export(
    ctx: click.Context, *, project: str, fmt: str, output: str, owner: str, data_dir: str | None
) -> None:
    """Export a project's fix log: a markdown digest to review in a diff, or lossless JSONL."""
    try:
        done = export_log(_store(ctx, data_dir), owner, project, "jsonl" if fmt == "jsonl" else "markdown")
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    with click.open_file(output, "wb", atomic=output != "-") as sink:
        sink.write(done.data)
    if done.malformed:
        click.echo(f"warning: {done.malformed} malformed log line(s) were not exported", err=True)
    if output != "-":
        click.echo(f"exported {done.entries} entries of {project!r} to {output}", err=True)


@click.command("import")
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--project", "-p", default=None, help="Refuse entries of any other project.")
@owner_option
@data_dir_option
@click.pass_context
def import_(ctx: click.Context, source: Any, project: str | None, owner: str, data_dir: str | None) -> None:
    """Import a JSONL export (file or '-'): ids kept, entries already present skipped."""
    try:
        result = import_log(_store(ctx, data_dir, writes=True), owner, source.read(), project=project)
    except ImportRefused as exc:
        for problem in exc.problems:
            click.echo(f"{source.name}:{problem.line}: {problem.reason}", err=True)
        raise click.ClickException(f"{len(exc.problems)} invalid line(s); nothing was imported") from exc
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"imported {result.added} entries into {', '.join(map(repr, result.projects)) or 'no project'}"
        f" ({result.already_present} already present, {result.dropped} dropped by rotation"
        f"{f', {result.forgotten} forgotten here before' if result.forgotten else ''})"
    )
    if result.changed:
        click.echo(
            f"note: {len(result.changed)} entries were stored differently from the file (redacted, or"
            f" reconciled by meaning): {', '.join(result.changed[:5])}",
            err=True,
        )
