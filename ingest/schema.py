"""The turn event, wire format v1: what a harness publishes when an agent turn ends.

Pure: values in, values out. ``parse_event`` turns raw stream bytes into a ``TurnEvent`` or raises
``InvalidEvent`` with a stable reason code; nothing here touches Redis, files or the clock.

Two tool-event shapes are accepted: the v1 shape ``{tool, input, output, exit_code, ok, ts, diff}`` and the
legacy shape of the harness that first documented this API, ``{tool, command, output, diff}``, where
``command`` holds the arguments as a JSON string (or raw text). Both validate to the same ``ToolEvent``.

A second kind of v1 event, ``{"kind": "verdict", …}`` (``VerdictEvent``), is a later word on a recorded turn
(CI, a benchmark, a review, a revert, a merge); a turn event has no ``kind`` (or ``"turn"``). ``parse_any``
reads either; ``parse_event`` reads turns only.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.links import VerdictLink
from ingest.recall_meta import RecallMeta

WIRE_VERSION = 1
MAX_OWNER_CHARS = 256
MAX_PROJECT_KEY_CHARS = 4096
MAX_TOOL_NAME_CHARS = 256
MAX_CHANGED_FILES = 1000  # harness_meta.changed_files: the SDK sends at most this many paths
DEFAULT_MAX_EVENT_BYTES = 1 << 20

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # one C search, not a Python loop over the characters


def _reject_control(value: str, what: str) -> str:
    bad = _CONTROL.search(value)
    if bad is not None:
        raise ValueError(f"{what} must not contain control characters (found {bad.group()!r})")
    return value


def _dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """JSON bytes via orjson; integers beyond 64 bits (which orjson refuses) fall back to the stdlib."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS if sort_keys else 0)
    except TypeError:
        text = json.dumps(value, default=str, sort_keys=sort_keys, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "surrogatepass")


def _as_text(value: Any) -> str:
    """Tool output as text: strings as is, content-block lists joined, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and "text" in b for b in value):
        return "\n".join(str(b["text"]) for b in value)
    return _dumps(value).decode("utf-8", "replace")


def _as_arguments(value: Any) -> dict[str, Any]:
    """Tool arguments as a dict: a JSON object string is parsed, other text becomes ``{"command": text}``."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{"):
            try:
                parsed = orjson.loads(stripped)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                return parsed
        return {"command": value}
    return {"value": value}


def _check_owner(value: str) -> str:
    if not value.strip():
        raise ValueError("owner must be non-empty")
    if value in {".", ".."} or "/" in value or "\\" in value:
        raise ValueError("owner must not be '.', '..' or contain a path separator")
    return _reject_control(value, "owner")


def _check_project_key(value: str) -> str:
    if not value.strip():
        raise ValueError("project_key must be non-empty")
    return _reject_control(value, "project_key")


def _check_ts(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise ValueError("ts must be a positive, finite number of unix seconds")
    return value


class ToolEvent(BaseModel):
    """One tool call of the turn and what it returned."""

    model_config = ConfigDict(extra="allow")

    tool: str = Field(
        min_length=1,
        max_length=MAX_TOOL_NAME_CHARS,
        description="The tool's name (`bash`, `edit`, `Write`, …).",
    )
    input: dict[str, Any] = Field(
        default_factory=dict,
        description="The call's arguments (a JSON object string is parsed; other text: {command: text}).",
    )
    output: str = Field(
        default="", description="What the tool returned, as text (content blocks are joined)."
    )
    exit_code: int | None = Field(default=None, description="The command's exit status, for shell tools.")
    ok: bool | None = Field(default=None, description="Whether the call succeeded, when the harness knows.")
    ts: float | None = Field(default=None, description="When the call ended, unix seconds.")
    diff: str | None = Field(default=None, description="The edit's diff, for editing tools.")

    @model_validator(mode="before")
    @classmethod
    def _accept_legacy_shape(cls, data: Any) -> Any:
        if isinstance(data, dict) and "input" not in data and "command" in data:
            data = dict(data)
            data["input"] = _as_arguments(data.pop("command"))
        return data

    @field_validator("input", mode="before")
    @classmethod
    def _arguments(cls, value: Any) -> dict[str, Any]:
        return _as_arguments(value)

    @field_validator("output", mode="before")
    @classmethod
    def _output(cls, value: Any) -> str:
        return _as_text(value)

    @field_validator("diff", mode="before")
    @classmethod
    def _diff(cls, value: Any) -> str | None:
        return None if value is None else _as_text(value)


class TestsMeta(BaseModel):
    """The harness's own verdict on the turn's tests; overrides what extraction parses."""

    model_config = ConfigDict(extra="allow")

    command: str = Field(default="", description="The test command the harness ran.")
    ok: bool = Field(description="Whether the tests passed.")
    summary: str = Field(default="", description="Its summary line (`14 passed`).")


# Verdict sources, highest precedence first (``store.verdicts.PRECEDENCE`` adds ``agent-tests`` below them).
VERDICT_SOURCES = ("revert", "review", "ci", "benchmark", "merged")
VerdictSource = Literal["revert", "review", "ci", "benchmark", "merged"]
VerdictOutcome = Literal["fixed", "partial", "unverified"]
MAX_VERDICT_DETAIL_CHARS = 2000
KIND_TURN = "turn"
KIND_VERDICT = "verdict"


class TurnVerdict(BaseModel):
    """A verdict the harness holds when it publishes the turn (a benchmark report, a later test run)."""

    model_config = ConfigDict(extra="allow")

    source: VerdictSource = Field(description="Who judged: revert, review, ci, benchmark or merged.")
    outcome: VerdictOutcome = Field(
        description="`fixed`: the fix held (tests passed, resolved); `partial`: it did not; `unverified`: "
        "the judge could not tell."
    )
    detail: str = Field(default="", max_length=MAX_VERDICT_DETAIL_CHARS, description="What it saw, one line.")
    ts: float | None = Field(default=None, description="When, unix seconds (default: the turn's ts).")


class HarnessMeta(BaseModel):
    """What the harness knows about the turn. All optional."""

    model_config = ConfigDict(extra="allow")

    harness: str | None = Field(default=None, description="The harness's name.")
    model: str | None = Field(default=None, description="The model that ran the turn.")
    session_id: str | None = Field(default=None, description="The agent session the turn belongs to.")
    turn: int | None = Field(default=None, description="The turn's number in its session.")
    commit: str | None = Field(default=None, description="The checkout's commit at the end of the turn.")
    # Where the turn sits in git, for linking verdicts (``workers.linker``); never part of the turn's id.
    commit_start: str | None = Field(default=None, description="HEAD when the turn started (hex sha).")
    commit_end: str | None = Field(default=None, description="HEAD when the turn ended (hex sha).")
    dirty: bool | None = Field(
        default=None, description="Whether the working tree had uncommitted changes when the turn ended."
    )
    gate_downgraded: bool = Field(
        default=False,
        description="The harness downgraded the turn to unverified (its entry's outcome is `unverified`).",
    )
    stop_reason: str | None = Field(
        default=None, description="Why the turn ended; `complete_unverified` makes the outcome `unverified`."
    )
    tests: TestsMeta | None = Field(
        default=None, description="The harness's own test verdict; overrides what extraction parses."
    )
    # Files the turn changed, as the harness measured them (``ingest.changed_files``: the working tree's
    # state at turn start vs turn end). Optional; when present, extraction takes it as the truth.
    changed_files: list[str] | None = Field(
        default=None,
        max_length=MAX_CHANGED_FILES,
        description="Files the turn changed, measured by the harness (working tree at turn start vs end); "
        "taken as the truth when present.",
    )
    verdict: TurnVerdict | None = Field(
        default=None,
        description="A verdict on this turn the harness already holds (a benchmark report's `resolved`); "
        "applied like a `verdict` event, never part of the turn's derived id.",
    )
    recall: RecallMeta | None = Field(
        default=None,
        description="What fix recall did in the turn's session (arm, fixes injected or shadow, followed): "
        "the impact measurement's record, never part of the turn's derived id.",
    )


class _Addressed(BaseModel):
    """The checks every v1 event shares: its version, time, owner and project key (fields of the subclass)."""

    @field_validator("v", check_fields=False)
    @classmethod
    def _version(cls, value: int) -> int:
        if value != WIRE_VERSION:
            raise ValueError(f"unsupported event version {value}: this build reads v{WIRE_VERSION}")
        return value

    @field_validator("ts", check_fields=False)
    @classmethod
    def _timestamp(cls, value: float) -> float:
        return _check_ts(value)

    @field_validator("owner", check_fields=False)
    @classmethod
    def _owner(cls, value: str) -> str:
        return _check_owner(value)

    @field_validator("project_key", check_fields=False)
    @classmethod
    def _project_key(cls, value: str) -> str:
        return _check_project_key(value)

    def to_wire(self) -> bytes:
        """The event as the JSON bytes a publisher puts in the stream's ``event`` field."""
        return _dumps(self.model_dump(mode="json", exclude_defaults=False))


class TurnEvent(_Addressed):
    """A finished agent turn: the user request, the tool calls and their outputs, and harness metadata."""

    model_config = ConfigDict(extra="ignore")

    v: int = Field(strict=True, description="The wire version: 1.", json_schema_extra={"const": WIRE_VERSION})
    event_id: str = Field(
        default="",
        max_length=512,
        description="The harness's id of the turn (a retried publish keeps it); derived from the content "
        "when empty.",
    )
    ts: float = Field(description="When the turn ended, unix seconds (positive, finite).")
    owner: str = Field(
        max_length=MAX_OWNER_CHARS,
        description="Whose memory the turn goes to (no '/', '\\', control characters; not '.' or '..').",
    )
    project_key: str = Field(
        max_length=MAX_PROJECT_KEY_CHARS,
        description="The project: the checkout's origin remote as host/owner/repo, else the workspace's "
        "absolute path (`ingest.project_key.project_key_for`).",
    )
    workspace: str = Field(
        default="",
        max_length=MAX_PROJECT_KEY_CHARS,
        description="The checkout's absolute path on the agent's host.",
    )
    user_message: str = Field(default="", description="The user's request that started the turn.")
    tool_events: list[ToolEvent] = Field(default_factory=list, description="The turn's tool calls, in order.")
    harness_meta: HarnessMeta = Field(
        default_factory=HarnessMeta, description="What the harness knows; all optional."
    )
    round_texts: list[str] = Field(
        default_factory=list,
        description="The agent's texts of the turn, in order (the last one feeds the entry's solution).",
    )

    @field_validator("workspace", "event_id")
    @classmethod
    def _no_control(cls, value: str) -> str:
        return _reject_control(value, "this field")

    @model_validator(mode="after")
    def _identity(self) -> TurnEvent:
        if not self.event_id:
            self.event_id = derive_event_id(self)
        return self


class VerdictEvent(_Addressed):
    """A later verdict on a recorded turn, published to the same stream by a CI job, a benchmark harness or a
    person: the turn's ``event_id`` (or its entry's ``entry_id``), whether the fix held, and who says so."""

    model_config = ConfigDict(extra="ignore")

    v: int = Field(strict=True, description="The wire version: 1.", json_schema_extra={"const": WIRE_VERSION})
    kind: Literal["verdict"] = Field(description="`verdict` (a turn event has no kind, or `turn`).")
    event_id: str = Field(
        default="", max_length=512, description="The judged turn's event_id (give it, entry_id or link)."
    )
    entry_id: str = Field(
        default="",
        pattern=r"^(fix-[0-9a-f]{16})?$",
        description="The judged turn's entry id (`fix-` + 16 hex), as `fixmem recall --json` shows it.",
    )
    ts: float = Field(description="When the verdict was reached, unix seconds (the latest of a source wins).")
    owner: str = Field(max_length=MAX_OWNER_CHARS, description="The turn's owner.")
    project_key: str = Field(max_length=MAX_PROJECT_KEY_CHARS, description="The turn's project key.")
    outcome: VerdictOutcome = Field(
        description="`fixed`: the fix held (tests passed, resolved); `partial`: it did not; `unverified`: "
        "the judge could not tell."
    )
    source: VerdictSource = Field(
        description="Who judged; precedence revert > review > ci > benchmark > merged > the agent's tests."
    )
    detail: str = Field(default="", max_length=MAX_VERDICT_DETAIL_CHARS, description="What it saw, one line.")
    link: VerdictLink | None = Field(
        default=None,
        description="What the judge knows instead of an id (commit, session, files, tests, hunks): "
        "the worker links it to entries (`workers.linker`).",
    )

    @field_validator("event_id", "detail")
    @classmethod
    def _no_control(cls, value: str) -> str:
        return _reject_control(value, "this field")

    @model_validator(mode="after")
    def _target(self) -> VerdictEvent:
        if self.link is not None and (self.event_id or self.entry_id):
            raise ValueError("a verdict names its turn by an id (event_id, entry_id) or by a link, not both")
        if self.link is None and not self.event_id and not self.entry_id:
            raise ValueError("a verdict names its turn: give event_id, entry_id or link")
        return self


Event = TurnEvent | VerdictEvent

# Fields added to v1 after ids were first derived from it: left out of the hash while unset, so an event
# that does not use them keeps the id every earlier version gave it (a retried turn stays one entry).
_LATER_FIELDS: dict[str, tuple[str, ...]] = {"harness_meta": ("changed_files",)}
# Fields that are never part of the turn's identity: a verdict is a later word on the turn, not the turn;
# where the turn sits in git is read at publish time; the session's impact record (``recall``) grows
# during the session, the turn stays the same.
_NOT_IDENTITY: dict[str, tuple[str, ...]] = {
    "harness_meta": ("verdict", "recall", "commit_start", "commit_end", "dirty")
}


def derive_event_id(event: TurnEvent) -> str:
    """``ev-`` + 32 hex of a hash of the canonical event (sorted keys, without ``event_id``)."""
    data = event.model_dump(mode="json", exclude={"event_id"})
    for parent, names in _LATER_FIELDS.items():
        for name in names:
            if data[parent].get(name) is None:
                data[parent].pop(name, None)
    for parent, names in _NOT_IDENTITY.items():
        for name in names:
            data[parent].pop(name, None)
    return "ev-" + hashlib.sha256(_dumps(data, sort_keys=True)).hexdigest()[:32]


def _summarize(exc: ValidationError, limit: int = 600) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "event"
        parts.append(f"{where}: {err['msg']}")
    text = "; ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decode(raw: bytes | str, max_bytes: int) -> Any:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if len(data) > max_bytes:
        raise InvalidEvent(
            DeadLetterReason.TOO_LARGE, f"event is {len(data)} bytes, over the limit of {max_bytes}"
        )
    try:
        return orjson.loads(data)  # orjson checks UTF-8 itself; classify only when it refuses
    except orjson.JSONDecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise InvalidEvent(DeadLetterReason.INVALID_UTF8, f"not valid UTF-8 at byte {bad.start}") from exc
        raise InvalidEvent(DeadLetterReason.INVALID_JSON, f"not valid JSON: {exc}") from exc


def parse_event(raw: bytes | str, *, max_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> TurnEvent:
    """Decode and validate one wire turn event.

    Raises InvalidEvent with reason too_large, invalid_utf8, invalid_json, not_an_object,
    unsupported_version or invalid_fields (also for a verdict: read those with ``parse_any``), and a
    message a person can act on.
    """
    return validate_event(_decode(raw, max_bytes))


def parse_any(raw: bytes | str, *, max_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Event:
    """Decode and validate one wire event of either kind (turn or verdict); raises InvalidEvent."""
    return validate_any(_decode(raw, max_bytes))


@dataclass(frozen=True, slots=True)
class Address:
    """What the consumer routes an event by: its kind, owner, project key and (turns) workspace."""

    kind: str
    owner: str
    project_key: str
    workspace: str = ""


def parse_address(raw: bytes | str, *, max_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Address:
    """Decode one wire event and check only what routing needs; raises InvalidEvent.

    The consumer's check (issue 21, "one validation"): size, UTF-8, JSON, a JSON object, the version, the
    kind, and the owner, project key and workspace with the same rules (and reason codes) as ``parse_any``.
    Every other field is checked once, by the worker's ``parse_any``, which dead-letters what fails there.
    """
    obj = _decode(raw, max_bytes)
    kind = _check_head(obj)
    owner = _address_field(obj, "owner", MAX_OWNER_CHARS, _check_owner, required=True)
    project_key = _address_field(obj, "project_key", MAX_PROJECT_KEY_CHARS, _check_project_key, required=True)
    workspace = ""
    if kind == KIND_TURN:
        workspace = _address_field(obj, "workspace", MAX_PROJECT_KEY_CHARS, _no_control, required=False)
    return Address(kind, owner, project_key, workspace)


def _address_field(
    obj: dict[str, Any], name: str, max_chars: int, check: Callable[[str], str], *, required: bool
) -> str:
    value = obj.get(name)
    if value is None and not required and name not in obj:
        return ""
    if not isinstance(value, str):
        raise InvalidEvent(DeadLetterReason.INVALID_FIELDS, f"{name}: a string is required")
    if len(value) > max_chars:
        raise InvalidEvent(DeadLetterReason.INVALID_FIELDS, f"{name}: at most {max_chars} characters")
    try:
        return check(value)
    except ValueError as exc:
        raise InvalidEvent(DeadLetterReason.INVALID_FIELDS, f"{name}: {exc}"[:600]) from exc


def _no_control(value: str) -> str:
    return _reject_control(value, "this field")


def _check_head(obj: Any) -> str:
    """An event's kind, once it is an object of version 1 and of a known kind; raises InvalidEvent."""
    if not isinstance(obj, dict):
        raise InvalidEvent(
            DeadLetterReason.NOT_AN_OBJECT, f"event must be a JSON object, got {type(obj).__name__}"
        )
    version = obj.get("v")
    if type(version) is not int or version != WIRE_VERSION:
        raise InvalidEvent(
            DeadLetterReason.UNSUPPORTED_VERSION,
            f"unsupported event version {version!r}: this build reads v{WIRE_VERSION}",
        )
    kind = obj.get("kind", KIND_TURN)
    if kind not in (KIND_TURN, KIND_VERDICT):
        raise InvalidEvent(
            DeadLetterReason.INVALID_FIELDS, f"kind: unknown event kind {kind!r} (turn or verdict)"[:600]
        )
    return str(kind)


def validate_event(obj: Any) -> TurnEvent:
    """Validate an already-decoded JSON value as a v1 turn event; raises InvalidEvent."""
    event = validate_any(obj)
    if not isinstance(event, TurnEvent):
        raise InvalidEvent(
            DeadLetterReason.INVALID_FIELDS, "kind: a verdict event where a turn event was expected"
        )
    return event


def validate_any(obj: Any) -> Event:
    """Validate an already-decoded JSON value as a v1 event: a turn, or a verdict (``kind``); raises
    InvalidEvent."""
    kind = _check_head(obj)
    model: type[TurnEvent] | type[VerdictEvent] = VerdictEvent if kind == KIND_VERDICT else TurnEvent
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InvalidEvent(DeadLetterReason.INVALID_FIELDS, _summarize(exc)) from exc
    except (TypeError, OverflowError, RecursionError) as exc:  # values no JSON round trip can carry
        raise InvalidEvent(DeadLetterReason.INVALID_FIELDS, f"unrepresentable value: {exc}") from exc
