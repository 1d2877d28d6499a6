"""The sessions a batch saw that made no entry: kept for impact (``store.sessions``, issue 31).

A turn that carries its session's impact record (``harness_meta.recall``, a valid arm) but makes no entry
because it touched no file (``skipped_no_files``) is still a turn of a session fixmem assigned an arm:
``held`` makes the record the worker keeps of it, and ``record`` writes a batch's records, one store call
per project (``FixStore.record_sessions``: joined, idempotent, under the project's lock). The other skips
are left out: ``skipped_disabled`` (the memory is off: nothing is written) and ``skipped_no_owner`` (no
owner, so no project to keep it in); so are dead letters (not a turn anyone can trust), and turns whose
entry ``forget`` refused (it was made; counting the session as "no fix" would be false).

``held`` runs only for turns that carry a record: ``jobs.decide`` tests ``harness_meta.recall`` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ingest.schema import TurnEvent
from store import FixStore
from store.paths import canonical_key
from store.sessions import SessionRecord, record_of

__all__ = ["COUNTED_SKIPS", "SessionRecord", "held", "record", "record_turns"]
COUNTED_SKIPS = frozenset({"skipped_no_files"})  # skips whose session still counts (module docstring)


class _Seen(Protocol):
    @property
    def owner(self) -> str: ...
    @property
    def project_key(self) -> str: ...
    @property
    def session(self) -> SessionRecord | None: ...


def held(event: TurnEvent, skip: str | None) -> SessionRecord | None:
    """The session record a turn that made no entry leaves (None for any other turn)."""
    recall = event.harness_meta.recall
    if skip not in COUNTED_SKIPS or recall is None:
        return None
    session = event.harness_meta.session_id or event.event_id  # as extraction names it on an entry
    return record_of(canonical_key(event.project_key), session, event.ts, recall.model_dump(mode="json"))


def record(store: FixStore, decisions: Iterable[_Seen]) -> int:
    """Write the batch's session records, one store call per project; returns the projects written.
    Raises StoreError (the job is retried; the records are idempotent)."""
    groups: dict[tuple[str, str], list[SessionRecord]] = {}
    for d in decisions:
        if d.session is not None:
            groups.setdefault((d.owner, d.project_key), []).append(d.session)
    for (owner, project_key), records in groups.items():
        store.record_sessions(owner, project_key, records)
    return len(groups)


@dataclass(frozen=True)
class _Turn:
    owner: str
    project_key: str
    session: SessionRecord | None


def record_turns(store: FixStore, events: Sequence[TurnEvent], skips: Sequence[str | None]) -> int:
    """``record`` for turns extracted outside a batch (``fixmem.service.record``: the local publisher),
    ``skips[i]`` being why ``events[i]`` made no entry (None: it made one). Raises StoreError."""
    return record(
        store,
        [
            _Turn(e.owner, e.project_key, held(e, skip))
            for e, skip in zip(events, skips, strict=True)
            if e.harness_meta.recall is not None
        ],
    )
