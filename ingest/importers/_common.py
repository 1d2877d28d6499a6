"""What every importer shares: the turn draft, event assembly, stable ids, size fitting, small parsers.

Pure: values in, values out. An importer turns a native log into ``TurnDraft``s and hands them to
``build_events``, which validates them as v1 ``TurnEvent``s, keeps each under the wire limit by cutting
the middle out of the longest strings (outputs first), and gives each a deterministic ``event_id``:
``bf-`` + 32 hex of SHA-256 over format, the log's own identity (session or instance id; empty when the
log has none: never its path), turn index and the content hash of the event.
A turn without a time is built at ``UNDATED_EPOCH`` + its index (so its id is fixed); the file shell then
dates it by the file's mtime with ``date_undated``, which keeps the id.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import ValidationError

from ingest.errors import IngestError
from ingest.fit import MIN_FIT_CHARS, WIRE_HEADROOM_BYTES, cut_middle, fit_body  # noqa: F401 - re-exported
from ingest.schema import (
    DEFAULT_MAX_EVENT_BYTES,
    MAX_PROJECT_KEY_CHARS,
    WIRE_VERSION,
    TurnEvent,
    derive_event_id,
)

# Logs that carry no time get this one (2000-01-01T00:00:00Z) plus the turn index in seconds while their
# ids are derived, so the ids are deterministic; the file shell then dates them by the file's mtime
# (``date_undated``). The event says so in ``harness_meta.ts_derived``.
UNDATED_EPOCH = 946684800.0
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UnreadableLog(IngestError):
    """Raised when a file is not a readable instance of the agent-log format it was parsed as."""


class PartialLog(UnreadableLog):
    """Raised when some records of a JSON-lines log were read and others were not; carries both."""

    def __init__(self, events: list[TurnEvent], problems: list[str]) -> None:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        super().__init__(f"{len(problems)} unreadable record(s): {shown}")
        self.events = events
        self.problems = problems


def partial(events: list[TurnEvent], problems: list[str]) -> list[TurnEvent]:
    """``events`` when there are no problems; else raises UnreadableLog, or PartialLog carrying the events."""
    if problems and not events:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise UnreadableLog(shown)
    if problems:
        raise PartialLog(events, problems)
    return events


@dataclass
class TurnDraft:
    """One turn as an importer sees it, before it becomes a validated ``TurnEvent``."""

    user_message: str = ""
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    round_texts: list[str] = field(default_factory=list)
    ts: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Origin:
    """Where the turns of one log come from: shared by all the events of that log."""

    format: str
    identity: str  # the log's own session / instance id, else "": the content hash alone (never a path)
    owner: str
    project_key: str
    workspace: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def build_events(
    origin: Origin, drafts: Sequence[TurnDraft], *, max_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> list[TurnEvent]:
    """Validated events for the drafts, in order; raises UnreadableLog if a turn cannot be made valid."""
    events = []
    for turn, draft in enumerate(drafts):
        ts = draft.ts
        meta = {**origin.meta, **draft.meta, "turn": turn}
        if ts is None or not math.isfinite(ts) or ts <= 0:
            ts = UNDATED_EPOCH + turn
            meta["ts_derived"] = True
        body: dict[str, Any] = {
            "v": WIRE_VERSION,
            "event_id": "bf-" + "0" * 32,  # placeholder of the final length while the size is fitted
            "ts": ts,
            "owner": origin.owner,
            "project_key": clean_key(origin.project_key) or "unknown",
            "workspace": clean_key(origin.workspace),
            "user_message": draft.user_message,
            "tool_events": draft.tool_events,
            "round_texts": [t for t in draft.round_texts if t.strip()],
            "harness_meta": {k: v for k, v in meta.items() if v is not None},
        }
        event = fit_event(body, max_bytes - WIRE_HEADROOM_BYTES)
        # A log with its own ids keeps the content hash of the whole event (their ids never changed); a
        # log without is known by its content alone: not by where it lies (Aider's workspace is its folder).
        content = derive_event_id(
            event if origin.identity else event.model_copy(update={"project_key": "", "workspace": ""})
        )
        key = "\0".join((origin.format, origin.identity, str(turn), content)).encode("utf-8", "surrogatepass")
        events.append(event.model_copy(update={"event_id": "bf-" + hashlib.sha256(key).hexdigest()[:32]}))
    return events


def date_undated(events: Sequence[TurnEvent], mtime: float) -> list[TurnEvent]:
    """``events`` with the turns whose log gave no time (``ts_derived``) dated by the file's ``mtime``
    (unix seconds): the last turn at ``mtime``, each earlier one a second before it, so the order stays.

    Their ids do not change: ``build_events`` derived them from the fixed ``UNDATED_EPOCH`` stand-in, so a
    re-run over a touched or copied file still yields the same events. A ``mtime`` of 0 or less (or not
    finite) changes nothing.
    """
    if not math.isfinite(mtime) or mtime <= 0:
        return list(events)
    undated = [e for e in events if _undated(e)]
    if not undated:
        return list(events)
    last = max(map(_turn, undated))
    return [e.model_copy(update={"ts": mtime - (last - _turn(e))}) if _undated(e) else e for e in events]


def _undated(event: TurnEvent) -> bool:
    return bool((event.harness_meta.model_extra or {}).get("ts_derived"))


def _turn(event: TurnEvent) -> int:
    return event.harness_meta.turn or 0


def _validate(body: dict[str, Any]) -> TurnEvent:
    try:
        return TurnEvent.model_validate(body)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "event"
        raise UnreadableLog(f"turn {body['harness_meta'].get('turn')}: {where}: {first['msg']}") from exc


# --- fitting under the wire limit (ingest.fit, shared with the publisher SDK) ----------------------------


def fit_event(body: dict[str, Any], budget: int) -> TurnEvent:
    """Validate ``body``, cutting the middle out of its longest strings until its wire form fits ``budget``
    (``ingest.fit.fit_body``: outputs first; the cut paths in ``harness_meta.cut``). Raises UnreadableLog
    if the turn is invalid or cannot be made to fit."""
    event = fit_body(body, budget, _validate)
    if event is None:
        raise UnreadableLog(f"turn {body['harness_meta'].get('turn')} does not fit in {budget} bytes")
    return event


# --- small parsers ----------------------------------------------------------------------------------------


def clean_key(value: str) -> str:
    """A project key or workspace with control characters removed, trimmed to the schema's limit."""
    return _CONTROL.sub("", value).strip()[:MAX_PROJECT_KEY_CHARS]


def parse_time(value: Any) -> float | None:
    """Unix seconds from an ISO-8601 string (naive means UTC) or a number (ms if > 1e11); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value) / 1000.0 if value > 1e11 else float(value)
        return seconds if math.isfinite(seconds) and seconds > 0 else None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        try:
            moment = datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = moment.timestamp()
    return seconds if seconds > 0 else None


def latest(*values: float | None) -> float | None:
    """The largest of the known times, or None."""
    known = [v for v in values if v is not None]
    return max(known) if known else None


_INSTANCE = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*?)__(?P<repo>[\w.-]+?)(?:-(?P<tail>[\w.]*\d[\w.]*))?$")


def repo_of_instance(instance_id: str) -> str | None:
    """``owner/repo`` from a SWE-bench style instance id (``django__django-10999`` → ``django/django``)."""
    match = _INSTANCE.match(instance_id.strip())
    if match is None:
        return None
    return f"{match['owner']}/{match['repo']}"


_SHA = re.compile(r"^[0-9a-f]{7,64}$")


def sha(value: str) -> str | None:
    """``value`` when it is a hex commit id (7 to 64 digits), else None (``HEAD``, ``""`` …)."""
    value = value.strip().lower()
    return value if _SHA.match(value) else None


def loads(data: bytes | str, what: str) -> Any:
    """JSON from bytes; raises UnreadableLog naming ``what`` when the bytes are not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UnreadableLog(f"{what} is not valid JSON: {exc}") from exc


def jsonl_records(data: bytes) -> tuple[list[tuple[int, Any]], list[str]]:
    """The JSON values of a JSON-lines file with their 1-based line numbers, and one problem per bad line."""
    records: list[tuple[int, Any]] = []
    problems: list[str] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc})")
    return records, problems


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (logs are read defensively, never trusted)."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def str_or_empty(value: Any) -> str:
    """``value`` if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def blocks_text(value: Any) -> str:
    """Text of a message content: a string, or the text blocks of a content-block list joined by newlines."""
    if isinstance(value, str):
        return value
    parts = []
    for block in arr(value):
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "image":
                parts.append("[image]")
    return "\n".join(parts)


def json_args(value: Any) -> dict[str, Any]:
    """Tool arguments given as a JSON object or as a JSON-object string; other text becomes ``{"raw": …}``."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {"raw": value} if value.strip() else {}
        return parsed if isinstance(parsed, dict) else {"raw": value}
    return {}


def between(source: str, start: str, end: str) -> str | None:
    """The text between the first ``start`` and the next ``end`` after it, stripped; None if absent."""
    i = source.find(start)
    if i < 0:
        return None
    j = source.find(end, i + len(start))
    if j < 0:
        return None
    return source[i + len(start) : j].strip()
