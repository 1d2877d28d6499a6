"""Session records: the agent sessions fix recall assigned an arm whose turns made no entry, or whose
entries rotation dropped from the log. Pure.

Impact (``store.impact``) reads each session's arm and outcome from the entries of its turns. A turn that
touches no file makes no entry (``skipped_no_files``), so a session whose turns never edit a file would be
invisible to the measurement in both arms: selection after treatment, if the memory changes whether agents
edit at all. The worker keeps, per project, the latest record of each such session (``SessionRecord``:
session id, arm, the time of its newest edit-less turn, the ids injected, shadow and followed; never any
text of the turn), and impact counts a session known only from these records as one that made no fix.

Rotation (at most ``cap`` entries a project, unverified dropped first) would lose sessions the same way,
and not at random: it drops unverified entries first, so the sessions left would look more fixed than they
ended. When an append's rotation drops an entry that carries a session's record, the store folds that
session into these records with the outcome its entry had (``Ended``), and impact reads it from there.

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
class Ended:
    """How a session's entry ended, kept when rotation dropped the entry: the outcome (a verdict's where
    one existed), what a verdict said (None: none), and the agent's own claim."""

    ts: float  # the entry's turn time
    entry: str  # its id
    fixed: bool
    verdict: bool | None
    claimed: bool


@dataclass(frozen=True)
class SessionRecord:
    """One session of a project that made no entry (yet), or whose entry rotation dropped: its arm, the
    newest turn recorded here, ids shown, and (``ended``) the outcome of the newest dropped entry."""

    project: str
    session: str
    arm: str  # "memory" or "holdback"
    ts: float  # unix seconds: the newest of its turns recorded here
    injected: tuple[str, ...] = ()  # entry ids injected (a memory session), sorted
    shadow: tuple[str, ...] = ()  # entry ids that would have been (a holdback session), sorted
    followed: tuple[str, ...] = ()  # of those, followed, sorted
    ended: Ended | None = None  # its newest entry that rotation dropped (None: none was)

    @property
    def shown(self) -> tuple[str, ...]:
        """The ids the session's arm was shown: injected in ``memory``, shadow in ``holdback``."""
        return self.injected if self.arm == "memory" else self.shadow


def sorted_ids(items: Iterable[Any]) -> tuple[str, ...]:
    """The string ids of ``items``, once each, sorted, at most ``MAX_IDS``: how a record keeps ids."""
    return tuple(sorted({i for i in items if isinstance(i, str)})[:MAX_IDS])


def record_of(project: str, session: str, ts: float, recall: Mapping[str, Any]) -> SessionRecord | None:
    """The record of a turn's ``harness_meta.recall`` (its JSON form: ``arm``, ``injected``/``shadow`` as
    ``[{"id": ...}]``, ``followed`` as ids); None without a valid arm or session."""
    arm = recall.get("arm")
    if arm not in ARMS or not session:
        return None
    listed = {
        kind: sorted_ids(i.get("id") for i in recall.get(kind) or () if isinstance(i, Mapping))
        for kind in ("injected", "shadow")
    }
    return SessionRecord(
        project, session[:MAX_SESSION_CHARS], str(arm), float(ts), listed["injected"], listed["shadow"],
        sorted_ids(recall.get("followed") or ()),
    )  # fmt: skip


def join(a: SessionRecord, b: SessionRecord) -> SessionRecord:
    """Two records of one session as one: the newest time, the union of each kind of ids; the arm of the
    later record (by time, then arm: the same whatever the order)."""
    later = max(a, b, key=lambda r: (r.ts, r.arm))
    return SessionRecord(
        later.project, later.session, later.arm, later.ts, sorted_ids((*a.injected, *b.injected)),
        sorted_ids((*a.shadow, *b.shadow)), sorted_ids((*a.followed, *b.followed)), _newest(a.ended, b.ended),
    )  # fmt: skip


def _newest(a: Ended | None, b: Ended | None) -> Ended | None:
    """The later of two dropped entries' outcomes (by time, then id, then the rest: order-free)."""
    if a is None or b is None:
        return a or b
    return max(a, b, key=lambda e: (e.ts, e.entry, e.fixed, e.verdict is not None, e.verdict, e.claimed))


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
    found: dict[str, Any] = {
        "session": record.session, "arm": record.arm, "ts": record.ts, "injected": list(record.injected),
        "shadow": list(record.shadow), "followed": list(record.followed),
    }  # fmt: skip
    if record.ended is not None:  # absent otherwise: files written before it read the same
        e = record.ended
        found["ended"] = {
            "ts": e.ts, "entry": e.entry, "fixed": e.fixed, "verdict": e.verdict, "claimed": e.claimed
        }  # fmt: skip
    return found


def from_json(project: str, obj: Any) -> SessionRecord:
    """What ``to_json`` wrote; raises ValueError, KeyError or TypeError for anything else."""
    if not isinstance(obj, dict) or obj["arm"] not in ARMS or not isinstance(obj["session"], str):
        raise ValueError(f"not a session record: {obj!r}"[:200])
    return SessionRecord(
        project, obj["session"], obj["arm"], float(obj["ts"]), sorted_ids(obj.get("injected") or ()),
        sorted_ids(obj.get("shadow") or ()), sorted_ids(obj.get("followed") or ()), _ended(obj.get("ended")),
    )  # fmt: skip


def _ended(obj: Any) -> Ended | None:
    """What ``to_json`` wrote for ``ended``; raises ValueError, KeyError or TypeError for anything else."""
    if obj is None:
        return None
    verdict = obj["verdict"]
    if not isinstance(obj["entry"], str) or not all(isinstance(obj[k], bool) for k in ("fixed", "claimed")):
        raise ValueError(f"not an ended entry: {obj!r}"[:200])
    if verdict is not None and not isinstance(verdict, bool):
        raise ValueError(f"not a verdict: {verdict!r}"[:200])
    return Ended(float(obj["ts"]), obj["entry"], obj["fixed"], verdict, obj["claimed"])
