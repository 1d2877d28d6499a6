"""What a backfill's events became in the fix log: entries by outcome, and why the others have none.

Read after the pipeline has processed the events (``ingest.backfill.follow``):

- an event whose entry (``entry_id(owner, project, event_id)``) is in its project's log counts under the
  entry's outcome; ``PresenceProbe`` (called before each file is published) says which entries were in
  the log before this run published them;
- an event in the dead-letter stream counts as ``dead_letter:<reason>``; one still on its way when the
  wait ended as ``not_processed``, one in a failed job as ``failed_job``;
- the rest had no entry made: the files of these events are imported again (same options, same ids) and
  extracted here, with the workers' code, to give the reason (``skipped_no_files`` …); an event whose
  entry the log holds under an id of an earlier rule (``store.entry.content_key``) was already there; an
  event that extraction turns into an entry which the log no longer holds was rotated out (or forgotten).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from ingest import dead_letters
from ingest.backfill.config import RunConfig
from ingest.backfill.records import Drain, FileRecord, Sent
from ingest.batching import parse_stream_id
from ingest.importers import import_file
from store import FixStore, entry_id
from store.entry import content_key
from workers.extraction import Limits, extract

ROTATED_OUT = "not in the fix log (rotated out or forgotten)"
SAME_CONTENT = "already in the fix log under an earlier id"
NOT_PROCESSED = "not_processed"  # still on its way when the wait ended
FAILED_JOB = "failed_job"
UNEXPLAINED = "no entry (not re-extracted: too many to explain)"
EXPLAIN_LIMIT = 20_000  # events without an entry that are imported again to say why


class PresenceProbe:
    """``before_publish`` hook: remembers which of the events' entries the log held before they were sent."""

    def __init__(self, store: FixStore) -> None:
        self.store = store
        self.known: dict[tuple[str, str], set[str]] = {}
        self.present: set[str] = set()

    def __call__(self, events: Sequence[Sent]) -> None:
        """Look the events' entries up (one read per project, at its first sight in the run)."""
        for event in events:
            project = (event.owner, event.project_key)
            if project not in self.known:
                self.known[project] = {e.id for e in self.store.read(*project).entries}
            eid = entry_id(event.owner, event.project_key, event.event_id)
            if eid in self.known[project]:
                self.present.add(eid)


@dataclass
class Outcomes:
    """Per unique entry: its outcome; per event without one: the reason."""

    entries: Counter[str] = field(default_factory=Counter)  # outcome -> entries
    already_in_log: int = 0  # entries the log held before this run published their events
    duplicates: int = 0  # events of this run whose entry another event of this run already is
    no_entry: Counter[str] = field(default_factory=Counter)  # reason -> events

    def to_json(self) -> dict[str, Any]:
        """A JSON value for the report."""
        total = sum(self.entries.values())
        return {
            "entries": dict(sorted(self.entries.items())),
            "entries_total": total,
            "new_entries": total - self.already_in_log,
            "already_in_log": self.already_in_log,
            "duplicate_events": self.duplicates,
            "no_entry": dict(sorted(self.no_entry.items())),
        }


def describe(report: dict[str, Any]) -> list[str]:
    """The report's lines on the entries (``Outcomes.to_json`` in its pipeline side), if it waited."""
    pipeline = report["pipeline"]
    if pipeline is None:
        return []
    if "entries" not in pipeline:
        return ["entries: no fix logs under FIXMEM_DATA_DIR here (the workers write elsewhere?)"]
    by_outcome = ", ".join(f"{k} {v}" for k, v in pipeline["entries"].items()) or "none"
    new, known = pipeline["new_entries"], pipeline["already_in_log"]
    lines = [f"entries: {by_outcome} ({new} new, {known} already in the log)"]
    if pipeline["no_entry"]:
        lines.append("no entry: " + ", ".join(f"{k} {v}" for k, v in pipeline["no_entry"].items()))
    return lines


def collect(
    store: FixStore,
    client: redis.Redis,
    records: Sequence[FileRecord],
    drain: Drain,
    *,
    dead_stream: str,
    config: RunConfig,
    present: Iterable[str] = (),
    enabled: bool = True,
) -> Outcomes:
    """The outcomes of every event in ``records`` (see the module docstring)."""
    sent = [s for r in records for s in r.sent]
    outcomes = Outcomes()
    present_before = set(present)
    logs: dict[tuple[str, str], dict[str, str]] = {}
    seen: set[str] = set()
    missing: list[Sent] = []
    dead = _dead_letters(client, dead_stream, config.stream, sent)
    for s in sent:
        project = (s.owner, s.project_key)
        if project not in logs:
            logs[project] = {e.id: e.outcome for e in store.read(*project).entries}
        eid = entry_id(s.owner, s.project_key, s.event_id)
        if eid in seen:
            outcomes.duplicates += 1
        elif eid in logs[project]:
            seen.add(eid)
            outcomes.entries[logs[project][eid]] += 1
            outcomes.already_in_log += eid in present_before
        elif s.stream_id in dead:
            outcomes.no_entry[f"dead_letter:{dead[s.stream_id]}"] += 1
        elif s.stream_id in drain.failed:
            outcomes.no_entry[FAILED_JOB] += 1
        elif s.stream_id in drain.unfinished:
            outcomes.no_entry[NOT_PROCESSED] += 1
        else:
            missing.append(s)
    outcomes.no_entry.update(_explain(store, records, missing, config=config, enabled=enabled))
    return outcomes


def _dead_letters(client: redis.Redis, dead_stream: str, origin: str, sent: Sequence[Sent]) -> dict[str, str]:
    """Stream id -> dead-letter reason, for the events of ``sent`` that were dead-lettered."""
    ids = {s.stream_id for s in sent}
    if not ids:
        return {}
    oldest_ms = min(parse_stream_id(i)[0] for i in ids)
    found = {}
    for letter in dead_letters.iter_letters(client, dead_stream, after=f"{oldest_ms}-0"):
        if letter.origin_stream == origin and letter.origin_id in ids:
            found[letter.origin_id] = letter.reason
    return found


def _explain(
    store: FixStore,
    records: Sequence[FileRecord],
    missing: Sequence[Sent],
    *,
    config: RunConfig,
    enabled: bool,
) -> Counter[str]:
    """Why each of ``missing`` has no entry: re-import its file and extract it with the workers' code."""
    reasons: Counter[str] = Counter()
    if len(missing) > EXPLAIN_LIMIT:
        reasons[UNEXPLAINED] = len(missing)
        return reasons
    wanted = {s.event_id for s in missing}
    explained: dict[str, str] = {}
    contents: dict[tuple[str, str], set[bytes | None]] = {}
    for record in records:
        if not any(s.event_id in wanted for s in record.sent):
            continue
        path = Path(record.path)
        imported = import_file(
            path, format=record.format or config.format, owner=config.owner, project=config.project
        )
        for event in imported.events:
            if event.event_id in wanted:
                extracted = extract(event, enabled=enabled, limits=Limits())
                if extracted.entry is None:
                    explained[event.event_id] = extracted.skip.value if extracted.skip else ROTATED_OUT
                    continue
                project = (event.owner, event.project_key)
                if project not in contents:
                    contents[project] = {content_key(e) for e in store.read(*project).entries}
                found = content_key(extracted.entry) in contents[project] - {None}
                explained[event.event_id] = SAME_CONTENT if found else ROTATED_OUT
    for s in missing:
        reasons[explained.get(s.event_id, "no entry (the file changed since it was published)")] += 1
    return reasons
