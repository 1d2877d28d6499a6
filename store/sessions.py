"""Session records: the agent sessions fix recall assigned an arm whose turns made no entry. Pure.

Impact (``store.impact``) reads each session's arm and outcome from the entries of its turns. A turn that
touches no file makes no entry (``skipped_no_files``), so a session whose turns never edit a file would be
invisible to the measurement in both arms: selection after treatment, if the memory changes whether agents
edit at all. The worker keeps, per project, the latest record of each such session (``SessionRecord``:
session id, arm, the time of its newest edit-less turn, the ids injected, shadow and followed; never any
text of the turn), and impact counts a session known only from these records as one that made no fix.

``join`` of two records of one session is their union: a session's record only grows during the session
(``ingest.recall_meta``), so the union of two of its snapshots is the later one. It is commutative,
associative and idempotent (ids sorted, at most ``MAX_IDS`` of each kind), so a replayed batch, a retried
job or batches written in any order leave the same records. ``merge`` keeps the newest ``KEPT`` sessions
of a project (by the time of their newest record, then session id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

ARMS: Final = ("memory", "holdback")
KEPT: Final = 2000  # sessions one project's record file keeps, the newest first
MAX_IDS: Final = 200  # ids of each kind one record keeps (ingest.recall_meta.MAX_SHOWN)
MAX_SESSION_CHARS: Final = 512  # a session id is cut to this, as on entries (extraction's _git_place)


@dataclass(frozen=True)
class SessionRecord:
    """One session of a project that made no entry (yet): its arm, newest edit-less turn, ids shown."""

    project: str
    session: str
    arm: str  # "memory" or "holdback"
    ts: float  # unix seconds: the newest of its turns recorded here
    injected: tuple[str, ...] = ()  # entry ids injected (a memory session), sorted
    shadow: tuple[str, ...] = ()  # entry ids that would have been (a holdback session), sorted
    followed: tuple[str, ...] = ()  # of those, followed, sorted

    @property
    def shown(self) -> tuple[str, ...]:
        """The ids the session's arm was shown: injected in ``memory``, shadow in ``holdback``."""
        return self.injected if self.arm == "memory" else self.shadow


def _ids(items: Iterable[Any]) -> tuple[str, ...]:
    return tuple(sorted({i for i in items if isinstance(i, str)})[:MAX_IDS])


def record_of(project: str, session: str, ts: float, recall: Mapping[str, Any]) -> SessionRecord | None:
    """The record of a turn's ``harness_meta.recall`` (its JSON form: ``arm``, ``injected``/``shadow`` as
    ``[{"id": ...}]``, ``followed`` as ids); None without a valid arm or session."""
    arm = recall.get("arm")
    if arm not in ARMS or not session:
        return None
    listed = {
        kind: _ids(i.get("id") for i in recall.get(kind) or () if isinstance(i, Mapping))
        for kind in ("injected", "shadow")
    }
    return SessionRecord(
        project, session[:MAX_SESSION_CHARS], str(arm), float(ts), listed["injected"], listed["shadow"],
        _ids(recall.get("followed") or ()),
    )  # fmt: skip


def join(a: SessionRecord, b: SessionRecord) -> SessionRecord:
    """Two records of one session as one: the newest time, the union of each kind of ids; the arm of the
    later record (by time, then arm: the same whatever the order)."""
    later = max(a, b, key=lambda r: (r.ts, r.arm))
    return SessionRecord(
        later.project, later.session, later.arm, later.ts, _ids((*a.injected, *b.injected)),
        _ids((*a.shadow, *b.shadow)), _ids((*a.followed, *b.followed)),
    )  # fmt: skip


def merge(
    held: Iterable[SessionRecord], new: Iterable[SessionRecord], *, kept: int = KEPT
) -> list[SessionRecord]:
    """``held`` with ``new`` joined in, one record per session, the newest ``kept`` sessions (by time,
    then session id), newest first."""
    by_session: dict[str, SessionRecord] = {}
    for record in (*held, *new):
        known = by_session.get(record.session)
        by_session[record.session] = record if known is None else join(known, record)
    ordered = sorted(by_session.values(), key=lambda r: (r.ts, r.session), reverse=True)
    return ordered[:kept]


def to_json(record: SessionRecord) -> dict[str, Any]:
    """The record as its file holds it (the project is the file's)."""
    return {
        "session": record.session, "arm": record.arm, "ts": record.ts, "injected": list(record.injected),
        "shadow": list(record.shadow), "followed": list(record.followed),
    }  # fmt: skip


def from_json(project: str, obj: Any) -> SessionRecord:
    """What ``to_json`` wrote; raises ValueError, KeyError or TypeError for anything else."""
    if not isinstance(obj, dict) or obj["arm"] not in ARMS or not isinstance(obj["session"], str):
        raise ValueError(f"not a session record: {obj!r}"[:200])
    return SessionRecord(
        project, obj["session"], obj["arm"], float(obj["ts"]), _ids(obj.get("injected") or ()),
        _ids(obj.get("shadow") or ()), _ids(obj.get("followed") or ()),
    )  # fmt: skip
