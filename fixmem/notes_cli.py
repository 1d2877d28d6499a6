"""``fixmem notes add|check``: the thin shell around ``store.notes`` (files, git, today's date).

The pure grammar and renderer live in ``store.notes``; this module reads and appends
``<workspace>/.fixmem/memory.md`` and asks git (a subprocess) for HEAD and the known commits.

Exit codes: 0 ok; 1 (``EXIT_MALFORMED``) when ``notes check`` found malformed lines or the file cannot be
read; 2 usage errors (click), including a refused note (unknown kind, empty subject).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final

import click

from fixmem.settings import Settings
from store.notes import (
    MEMORY_FILE,
    MemoryFile,
    MemoryUnreadable,
    Note,
    NoteRejected,
    append_separator,
    format_note,
    new_note,
    parse_memory,
    stale_flags,
)
from store.notes.render import STALE_MARK

EXIT_MALFORMED: Final = 1
GIT_TIMEOUT_SECONDS: Final = 60.0


class MalformedMemory(click.ClickException):
    """Raised by ``notes check`` when the memory file has malformed lines (exit status 1)."""

    exit_code = EXIT_MALFORMED


# -- files -------------------------------------------------------------------------------------------


def memory_path(workspace: Path) -> Path:
    """``<workspace>/.fixmem/memory.md``."""
    return workspace / MEMORY_FILE


def read_memory(workspace: Path) -> MemoryFile | None:
    """The parsed memory file of ``workspace``, or None when there is none (the ordinary case).

    Raises MemoryUnreadable (naming the path) when it exists and cannot be read or is not UTF-8.
    """
    path = memory_path(workspace)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemoryUnreadable(f"{path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MemoryUnreadable(f"{path}:{line}: not UTF-8 (byte {exc.start}); save it as UTF-8") from exc
    return parse_memory(text)


def append_note(workspace: Path, note: Note) -> int:
    """Append ``note`` to the memory file (created if missing) under an exclusive flock; its header line.

    Raises MemoryUnreadable when the file or its directory cannot be written.
    """
    path = memory_path(workspace)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released on close
            handle.seek(0)
            existing = handle.read()
            separator = append_separator(existing[-2:].decode("utf-8", errors="replace"))
            handle.write((separator + format_note(note)).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise MemoryUnreadable(f"{path}: {exc.strerror or exc}") from exc
    return existing.count(b"\n") + separator.count("\n") + 1


# -- git -----------------------------------------------------------------------------------------------


def _git(workspace: Path, *args: str) -> str | None:
    """stdout of ``git -C workspace args``, or None when git is missing or the command fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(workspace), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_head(workspace: Path) -> str | None:
    """The abbreviated commit id of the workspace's HEAD, or None (not a repository, no commit yet)."""
    out = _git(workspace, "rev-parse", "--short", "--verify", "--quiet", "HEAD")
    head = (out or "").strip().lower()
    return head or None


def known_commits(workspace: Path) -> frozenset[str]:
    """Full ids of every commit reachable from a ref; empty when nothing could be checked.

    Empty (nothing marked stale) outside a repository, and in a shallow clone, where history is
    missing by design and every older commit would look gone.
    """
    if (_git(workspace, "rev-parse", "--is-shallow-repository") or "").strip() != "false":
        return frozenset()
    out = _git(workspace, "rev-list", "--all")
    return frozenset(out.split()) if out else frozenset()


# -- commands ------------------------------------------------------------------------------------------


def _settings(ctx: click.Context) -> Settings:
    found = ctx.find_object(Settings)
    return found if found is not None else Settings.from_env()


def _workspace(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.is_dir():
        raise click.BadParameter(f"{value} is not a directory", param_hint="'--workspace'")
    return path.resolve()


workspace_option = click.option(
    "--workspace",
    "-w",
    default=".",
    show_default=True,
    envvar="FIXMEM_WORKSPACE",
    help="The repository whose .fixmem/memory.md to use.",
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
    try:
        note = new_note(kind, subject, body, learned=date.today(), commit=head)
    except NoteRejected as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        line = append_note(where, note)
    except MemoryUnreadable as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"added {note.kind} {note.subject!r} at {memory_path(where)}:{line}")
    if head is None:
        click.echo(
            f"warning: {where} has no git HEAD; the note carries no commit and can never be marked stale",
            err=True,
        )


@dataclass(frozen=True, slots=True)
class _Checked:
    note: Note
    stale: bool
    shown: bool


def _check_rows(memory: MemoryFile, known: frozenset[str], ceiling: int) -> list[_Checked]:
    flags = stale_flags(memory.notes, known)
    first_shown = max(0, len(memory.notes) - ceiling)
    return [
        _Checked(note, stale, index >= first_shown)
        for index, (note, stale) in enumerate(zip(memory.notes, flags, strict=True))
    ]


def _provenance(note: Note) -> str:
    parts = [f"learned {note.learned.isoformat()}"] if note.learned else []
    parts += [f"commit {note.commit}"] if note.commit else []
    return f" ({' · '.join(parts)})" if parts else " (no provenance)"


@notes.command("check")
@workspace_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def check(ctx: click.Context, workspace: str, fmt: str) -> None:
    """List notes, malformed lines and stale notes; exit 1 when anything is malformed (for CI)."""
    where = _workspace(workspace)
    path = memory_path(where)
    ceiling = _settings(ctx).notes_ceiling
    try:
        memory = read_memory(where)
    except MemoryUnreadable as exc:
        raise click.ClickException(str(exc)) from exc
    known = known_commits(where) if memory is not None else frozenset()
    rows = _check_rows(memory or MemoryFile(), known, ceiling)
    malformed = memory.malformed if memory is not None else ()
    if fmt == "json":
        click.echo(json.dumps(_check_json(path, memory, rows, ceiling, checked=bool(known)), indent=2))
    else:
        _check_text(path, memory, rows, ceiling, checked=bool(known))
    if malformed:
        raise MalformedMemory(f"{len(malformed)} malformed line(s) in {path}")


def _check_json(
    path: Path, memory: MemoryFile | None, rows: list[_Checked], ceiling: int, *, checked: bool
) -> dict[str, Any]:
    return {
        "path": str(path),
        "exists": memory is not None,
        "ceiling": ceiling,
        "commits_checked": checked,
        "notes": [
            {
                "line": r.note.line,
                "kind": r.note.kind,
                "subject": r.note.subject,
                "body": r.note.body,
                "learned": r.note.learned.isoformat() if r.note.learned else None,
                "commit": r.note.commit,
                "stale": r.stale,
                "shown": r.shown,
            }
            for r in rows
        ],
        "malformed": [
            {"line": m.line, "text": m.text, "reason": m.reason, "lost_block": m.lost_block}
            for m in (memory.malformed if memory else ())
        ],
    }


def _check_text(
    path: Path, memory: MemoryFile | None, rows: list[_Checked], ceiling: int, *, checked: bool
) -> None:
    if memory is None:
        click.echo(f"no memory file at {path} (add one with: fixmem notes add)")
        return
    stale = [r for r in rows if r.stale]
    hidden = sum(1 for r in rows if not r.shown)
    click.echo(
        f"{path}: {len(rows)} note(s), {len(memory.malformed)} malformed line(s), {len(stale)} stale note(s)"
    )
    for r in rows:
        marks = "" if r.shown else "  [beyond the ceiling]"
        marks += f"  {STALE_MARK}" if r.stale else ""
        click.echo(f"  {r.note.line:>5}  {r.note.kind:<10}  {r.note.subject}{_provenance(r.note)}{marks}")
    if hidden:
        click.echo(f"{hidden} older note(s) are beyond the ceiling of {ceiling} and do not reach the prompt")
    if not checked:
        click.echo("commits not checked (not a git repository, no commits, or a shallow clone)")
    for r in stale:
        click.echo(f"stale: {path}:{r.note.line}: {r.note.subject}: commit {r.note.commit} {STALE_MARK}")
    for m in memory.malformed:
        what = "block not read" if m.lost_block else "provenance not read"
        click.echo(f"malformed: {path}:{m.line}: {m.text.strip()!r}: {m.reason} ({what})", err=True)
