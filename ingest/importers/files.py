"""The thin file-reading shell over the pure importers: walk paths, read bytes, detect, parse, report.

``import_file`` never raises for a bad file: every failure (unreadable, empty, binary, unrecognized,
corrupt, truncated) comes back as ``ImportedFile.error``, with whatever events could still be read.
Turns the log gives no time get the file's mtime (``date_undated``: their ids do not depend on it).
A turn keyed by its workspace (Claude Code's and Codex's cwd, Aider's folder, an OpenHands event list's
workspace) is keyed by the checkout's origin remote instead when this machine has the checkout (the rule of
``ingest.project_key``), after its id is derived, so the id does not depend on what this machine holds.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ingest.importers import aider, claude_code, codex, events, mini_swe_agent, openhands, swe_agent, verdicts
from ingest.importers._common import PartialLog, UnreadableLog, clean_key, date_undated
from ingest.importers.detect import detect_format
from ingest.project_key import remote_key_for
from ingest.schema import TurnEvent

Parser = Callable[..., list[TurnEvent]]
PARSERS: dict[str, Parser] = {
    events.FORMAT: events.parse,
    mini_swe_agent.FORMAT: mini_swe_agent.parse,
    swe_agent.FORMAT: swe_agent.parse,
    openhands.FORMAT: openhands.parse,
    claude_code.FORMAT: claude_code.parse,
    aider.FORMAT: aider.parse,
    codex.FORMAT: codex.parse,
}
FORMATS: tuple[str, ...] = tuple(PARSERS)
MAX_FILE_BYTES = 512 << 20  # a log bigger than this is refused rather than read into memory
EMPTY_FILE = "empty file"
UNRECOGNIZED = "unrecognized format"
NOT_REGULAR = "not a regular file"
_NOT_A_LOG = (EMPTY_FILE, UNRECOGNIZED, NOT_REGULAR)
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".tox"})


@dataclass(frozen=True)
class ImportedFile:
    """What one file yielded: its format (None when unrecognized), its events, and the error if any.

    ``error`` with events means a partial read (some lines were bad); ``notes`` says why a readable file
    gave no events (a Claude Code subagent file is imported with its parent session).
    """

    path: Path
    format: str | None
    events: list[TurnEvent]
    error: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def is_log(self) -> bool:
        """False for a file that is no agent log at all (empty, or of no known format): skip it, not fail."""
        return self.format is not None or self.error is None or not self.error.startswith(_NOT_A_LOG)


def iter_files(paths: Sequence[Path]) -> Iterator[Path]:
    """Every file named or found under the directories named, once each, in sorted order.

    Version-control, cache and virtualenv directories are not entered; symlinked directories are not followed.
    """
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS]
                found.update(Path(folder) / name for name in names)
        elif path.is_file():
            found.add(path)
    yield from sorted(found, key=lambda p: p.as_posix())


def import_file(
    path: Path,
    *,
    format: str = "auto",
    owner: str,
    project: str | None = None,
) -> ImportedFile:
    """Read and parse one log file (``project``: the key of every turn, else each log's own).
    Raises ValueError only for an unknown ``format`` name."""
    if format != "auto" and format not in PARSERS:
        raise ValueError(f"unknown format {format!r}: expected auto or one of {', '.join(FORMATS)}")
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # a FIFO or socket would block the read or fail it
            return ImportedFile(path, None, [], f"{NOT_REGULAR}: {stat.filemode(st.st_mode)}")
        size = st.st_size
        if size > MAX_FILE_BYTES:
            return ImportedFile(path, None, [], f"file is {size} bytes, over the {MAX_FILE_BYTES} byte limit")
        data = path.read_bytes()
    except OSError as exc:
        return ImportedFile(path, None, [], f"cannot read file: {exc.strerror or exc}")
    if not data.strip():
        return ImportedFile(path, None, [], EMPTY_FILE)
    try:
        fmt = detect_format(path, data) if format == "auto" else format
    except Exception:  # detection is fuzzed to never raise; should it, the file is unrecognized, not fatal
        fmt = None
    if fmt is None:
        return ImportedFile(path, None, [], f"{UNRECOGNIZED}: not one of {', '.join(FORMATS)}")
    imported = _parse(path, fmt, data, owner=owner, project=project)
    if imported.events and fmt in _BENCHMARK_REPORTED:
        imported = _judged(path, imported)
    if not imported.events or fmt == events.FORMAT:  # our own events carry their times and keys as given
        return imported
    dated = date_undated(imported.events, st.st_mtime)
    return dataclasses.replace(imported, events=dated if project else keyed_by_workspace(dated))


_BENCHMARK_REPORTED = frozenset({mini_swe_agent.FORMAT, swe_agent.FORMAT})


def _judged(path: Path, imported: ImportedFile) -> ImportedFile:
    """``imported`` with the verdict of a SWE-bench ``report.json`` beside the trajectory, if it has one
    for the run's instance (``ingest.importers.verdicts``); a missing or unreadable report changes nothing."""
    report = path.parent / verdicts.REPORT_NAME
    try:
        if not report.is_file() or report.stat().st_size > verdicts.MAX_REPORT_BYTES:
            return imported
        data = report.read_bytes()
    except OSError:
        return imported
    found = list(imported.events)
    for session in dict.fromkeys(e.harness_meta.session_id or "" for e in imported.events):
        resolved = verdicts.swebench_resolved(data, session)
        if resolved is not None:
            detail = f"SWE-bench report.json: {'resolved' if resolved else 'not resolved'}"
            found = verdicts.with_verdict(found, session, verdicts.benchmark_verdict(resolved, detail))
    return dataclasses.replace(imported, events=found)


def keyed_by_workspace(found: Sequence[TurnEvent]) -> list[TurnEvent]:
    """``found`` with each turn whose project key is its (absolute) workspace keyed by the checkout's origin
    remote instead, when this machine has that checkout (``project_key_for``'s rule; else the workspace
    stays the key as the log wrote it, the key such turns always had); ids unchanged."""
    keys: dict[str, str] = {}
    for event in found:
        # a relative workspace would be resolved against where the backfill runs: it keeps its key
        if (
            event.project_key == event.workspace
            and os.path.isabs(event.workspace)
            and event.workspace not in keys
        ):
            keys[event.workspace] = clean_key(remote_key_for(event.workspace) or "") or event.workspace
    return [
        event.model_copy(update={"project_key": keys[event.workspace]})
        if event.workspace in keys and event.project_key == event.workspace != keys[event.workspace]
        else event
        for event in found
    ]


def _parse(path: Path, fmt: str, data: bytes, *, owner: str, project: str | None) -> ImportedFile:
    source = Path(os.path.abspath(path)).as_posix()  # never an id; a project key only when the log has none
    notes: tuple[str, ...] = ()
    try:
        if fmt == claude_code.FORMAT:
            if claude_code.is_sidechain_log(data):
                note = "claude-code subagent log: imported with its parent session"
                return ImportedFile(path, fmt, [], None, (note,))
            sidechains, notes = _sidechains(path, data)
            found = claude_code.parse(
                data, source=source, owner=owner, project=project, sidechains=sidechains
            )
        elif fmt == aider.FORMAT:
            # the chat history lives in the repository's root: that directory is the workspace
            workspace = Path(os.path.abspath(path)).parent.as_posix()
            found = aider.parse(data, source=source, owner=owner, project=project, workspace=workspace)
        else:
            found = PARSERS[fmt](data, source=source, owner=owner, project=project)
    except PartialLog as exc:
        return ImportedFile(path, fmt, exc.events, str(exc), notes)
    except UnreadableLog as exc:
        return ImportedFile(path, fmt, [], str(exc), notes)
    except Exception as exc:  # the boundary: a malformed log must never abort a backfill
        return ImportedFile(
            path, fmt, [], f"{fmt} log could not be parsed: {type(exc).__name__}: {exc}", notes
        )
    return ImportedFile(path, fmt, found, None, notes)


def _sidechains(path: Path, data: bytes) -> tuple[list[bytes], tuple[str, ...]]:
    """The ``agent-*.jsonl`` subagent logs of this session: beside it, or in ``<session>/subagents/``."""
    session = claude_code.session_of(data)
    candidates = sorted(path.parent.glob("agent-*.jsonl")) + sorted(
        (path.parent / path.stem).glob("subagents/agent-*.jsonl")
    )
    blobs: list[bytes] = []
    notes: list[str] = []
    for candidate in candidates:
        try:
            blob = candidate.read_bytes()
        except OSError as exc:
            notes.append(f"subagent log {candidate.name} unreadable: {exc.strerror or exc}")
            continue
        if (
            claude_code.is_sidechain_log(blob)
            and session is not None
            and claude_code.session_of(blob) == session
        ):
            blobs.append(blob)
            notes.append(f"attached subagent log {candidate.name}")
    return blobs, tuple(notes)
