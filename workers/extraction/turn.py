"""``extract``: one turn event in, one fix entry (or the reason for none) out.

Pure: no Redis, no files, no clock. Every stored string passes through ``store.redact.redact``. The work
is bounded by ``Limits`` (see ``limits``), so a turn with 10,000 tool events or a 10 MB output costs a
bounded amount of time and memory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ingest.schema import HarnessMeta, ToolEvent, TurnEvent
from store.entry import FixEntry, TestRun, entry_id
from store.errorsig import normalize_error
from store.redact import might_hold_secret, redact
from workers.extraction.calls import Call, classify
from workers.extraction.changes import summarize_changes
from workers.extraction.errors import add_signature, find_errors, installs, is_environment_noise
from workers.extraction.files import collect_files
from workers.extraction.limits import Limits, WordSet, clip, select_events
from workers.extraction.outcome import EditEvidence, decide_outcome, decide_run
from workers.extraction.paths import PathResolver
from workers.extraction.shell import parse_commands, reads_only
from workers.extraction.solution import redact_each, solution_text, tags_for
from workers.extraction.tools import Family

# Version of the extraction and normalization rules; stored in entry.extractor. Bump on any rule change.
EXTRACTOR_VERSION = "fixmem-extract/3"
_COMMAND_CHARS = 300  # the stored test command is cut to this
_HEX = re.compile(r"^[0-9a-fA-F]{7,64}$")
# Every installer ``errors.installs`` knows has one of these in its command line (a cheap first test).
_INSTALLER_NAMES = WordSet(("pip", "uv", "conda", "mamba", "apt", "apk", "yum", "dnf", "brew", "npm", "yarn",
                            "pnpm", "gem", "cargo", "go ", "poetry"))  # fmt: skip
# Harnesses that run every shell command in a fresh subshell: a ``cd`` never carries to the next command.
SUBSHELL_HARNESSES = frozenset({"mini-swe-agent"})


class SkipReason(StrEnum):
    """Why a turn produced no entry."""

    NO_FILES = "skipped_no_files"
    DISABLED = "skipped_disabled"
    NO_OWNER = "skipped_no_owner"


@dataclass(frozen=True)
class Extracted:
    """The entry, or ``None`` with the reason (exactly one of the two is set)."""

    entry: FixEntry | None
    skip: SkipReason | None


def _mines_errors(call: Call) -> bool:
    """Outputs that can hold errors: commands that ran something (not reads, edits or file listings)."""
    family = call.family
    if family in {Family.READ, Family.EDIT, Family.WRITE, Family.PATCH}:
        return False
    if family is Family.SHELL:
        command = call.raw_command[:20_000]
        if not command or reads_only(command):
            return False
        if not _INSTALLER_NAMES.found_in(command):
            return True
        # an install's output is the environment's
        ran = [c for c in parse_commands(command) if c.words and c.words[0] not in {"cd", "echo", "sudo"}]
        return not ran or not all(installs(list(c.words)) for c in ran)
    return True


def collect_errors(
    events: Sequence[ToolEvent], workspace: str, limits: Limits, calls: Sequence[Call] | None = None
) -> list[str]:
    """Normalized, deduplicated error signatures in first-seen order, at most ``limits.max_errors``;
    ``calls``: the events' ``calls.classify`` when the caller has it."""
    raws: list[str] = []
    for call in calls if calls is not None else classify(events, limits):
        if call.event.output and _mines_errors(call):
            raws.extend(find_errors(call.window()))
    secret_free = not might_hold_secret("\n".join(raws))  # one anchor scan for the whole turn
    kept: list[str] = []
    raws = [raw for raw in raws if not is_environment_noise(raw)]
    for raw in raws:
        # redact before normalizing: cutting or rewriting digits must never leave half a secret
        text = raw if secret_free else redact(raw)
        add_signature(
            kept, normalize_error(text, workspace=workspace, limit=limits.max_error_chars), limits.max_errors
        )
        if len(kept) >= limits.max_errors and len(raws) > 4 * limits.max_errors:
            break
    return kept


def _clean_round(text: str) -> str:
    """A round text as the solution may quote it: its head, redacted."""
    return redact(clip(text, 4_000))


def _task(event: TurnEvent, limits: Limits) -> str:
    window = redact(clip(event.user_message, limits.max_task_chars * 4))
    return " ".join(window.split())[: limits.max_task_chars]


def extract(event: TurnEvent, *, enabled: bool = True, limits: Limits = Limits()) -> Extracted:  # noqa: B008
    """The fix entry of a turn, or why there is none (disabled, no owner, no file touched)."""
    if not enabled:
        return Extracted(entry=None, skip=SkipReason.DISABLED)
    if not event.owner.strip():
        return Extracted(entry=None, skip=SkipReason.NO_OWNER)
    events = select_events(event.tool_events, limits)
    calls = classify(events, limits)  # each event classified once; every step below reads these
    resolver = PathResolver.for_event(event.workspace, event.project_key)
    touched = collect_files(
        events,
        resolver,
        limits,
        persistent_cwd=event.harness_meta.harness not in SUBSHELL_HARNESSES,
        changed_files=event.harness_meta.changed_files,
        calls=calls,
    )
    if not touched.files:
        return Extracted(entry=None, skip=SkipReason.NO_FILES)
    errors = collect_errors(events, resolver.workspace, limits, calls)
    evidence = EditEvidence(
        tuple(touched.files), touched.edit_span, frozenset(touched.scratch), event.user_message[:4_000]
    )
    run = decide_run(events, limits, evidence, calls)
    tests, outcome = decide_outcome(run, event.harness_meta)
    if tests is not None:  # redacted before it is cut: a cut must never leave half a secret
        command, summary = redact_each([tests.command[: _COMMAND_CHARS * 4], tests.summary])
        tests = TestRun(command=" ".join(command.split())[:_COMMAND_CHARS], ok=tests.ok, summary=summary)
    runner = run.runner if run is not None and event.harness_meta.tests is None else None
    listed = [*touched.files, *touched.symbols, *errors]
    if might_hold_secret("\n".join(listed)):  # one anchor scan for all list fields; rarely true
        files, symbols, errors = ([redact(x) for x in xs] for xs in (touched.files, touched.symbols, errors))
    else:
        files, symbols = touched.files, touched.symbols
    recent = [t for t in event.round_texts if t.strip()][-3:]  # redacted only when read (_clean_round)
    solution = solution_text(files, tests, recent, limits.max_solution_chars, clean=_clean_round)
    project, commit = redact_each([event.project_key, event.harness_meta.commit or ""])
    entry = FixEntry(
        id=entry_id(event.owner, event.project_key, event.event_id),
        ts=event.ts,
        project=project,
        task=_task(event, limits),
        files=files,
        symbols=symbols,
        errors=errors,
        tests=tests,
        outcome=outcome,
        solution=redact(solution),
        tags=tags_for(files, runner, errors, outcome),  # made of redacted files and errors and fixed words
        commit=commit if event.harness_meta.commit else None,
        event_id=event.event_id,
        extractor=EXTRACTOR_VERSION,
        changes=summarize_changes(events, resolver, files, limits, calls=calls) or None,
        **_git_place(event.harness_meta, event.event_id),
        **impact_fields(event),
    )
    return Extracted(entry=entry, skip=None)


def _git_place(meta: HarnessMeta, event_id: str) -> dict[str, Any]:
    """The entry's ``commit_start``, ``commit_end``, ``dirty`` and ``session_id`` (hex shas only)."""
    start, end = (v.lower() if v and _HEX.match(v) else None for v in (meta.commit_start, meta.commit_end))
    session = meta.session_id[:512] if meta.session_id else None
    if session is None and meta.recall is not None:
        session = event_id  # an impact record always belongs to a session: here, of one turn
    return {"commit_start": start, "commit_end": end, "dirty": meta.dirty, "session_id": session}


def impact_fields(event: TurnEvent) -> dict[str, object]:
    """The session's impact record (``harness_meta.recall``) for the entry, when the turn carries one (an
    extra field of the line, absent from every other line; its session: ``_git_place``'s ``session_id``)."""
    meta = event.harness_meta
    if meta.recall is None:
        return {}
    return {"recall": meta.recall.model_dump(mode="json")}
