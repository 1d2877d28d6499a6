"""The ``recall_fixes`` tool: a read-only lookup of past fixes, its schemas, and auto-recall.

- ``recall_fixes(ctx, args)``: the handler. ``args`` = ``{query, files?, weights?, reasons?, error?, k?}`` (a
  mapping, or the JSON string OpenAI hands over); returns a ``ToolResult`` (the text the model reads, the
  prompt block, the fixes). Reads the store only: no side effect, safe to call any number of times.
- ``INPUT_SCHEMA`` (JSON Schema) and ``tool_schema("openai" | "anthropic" | "mcp")``: the same tool in
  each vendor's tool format (``fixmem tool-schema``); ``RecallArgs`` validates exactly what it describes.
- ``auto_recall(ctx, user_message, files=, errors=)``: the block to inject before a turn (project notes,
  then past fixes, within the budget), or "" when ``fix_memory_auto_recall`` is off or nothing is relevant.

The tool runs where the agent runs (MCP stdio, or in the harness), so ``workspace`` is the agent's own
checkout: paths are normalized against it and fixes whose files are gone are marked stale. A call that
names no file is a task-start question: with a ``localizer`` (``from_settings``: the checkouts' indexes
kept warm in this process, ``fixmem.runtime.localize``) the query is localized in the checkout, as the prompt
hook does, and recall weighs the files it points to; while the index is cold, text only.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fixmem import service
from fixmem.errors import InvalidInput
from fixmem.hooks.arms import HOLDBACK, arm_for
from fixmem.limits import (
    DEFAULT_K,
    DEFAULT_PROMPT_BUDGET_TOKENS,
    MAX_ERROR_CHARS,
    MAX_FILES,
    MAX_K,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
)
from fixmem.mcp.session import record, session_of
from fixmem.settings import Settings
from store import FixStore, Recalled
from store.localize import Localized
from store.notes.render import DEFAULT_CEILING

_log = logging.getLogger("fixmem.mcp")
TOOL_NAME: Final = "recall_fixes"
MAX_SESSION_ID_CHARS: Final = 256
TOOL_TITLE: Final = "Recall past fixes"
NOTHING_RELEVANT: Final = "No relevant past fix in this project."
DISABLED: Final = "Fix memory is disabled here (fix_memory_enabled is off)."

DESCRIPTION: Final = (
    "Look up past fixes in the current project before working on a task: what was changed, in which "
    "files, for which error, and whether the tests then passed (fixed), still failed (partial) or were "
    "not run (unverified). Call it with the task: a sentence or the whole issue text (names, paths and "
    "tracebacks in it help); add the files you expect to touch and the error you are facing when you know "
    "them. Returns a short 'Past fixes in this project' list, closely related fixes first, or says that "
    "nothing relevant is known. Read-only."
)

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": (
                f"The task or problem at hand: a sentence or the whole issue text (over {MAX_QUERY_CHARS} "
                "characters it is trimmed to its head and its code and traceback lines)."
            ),
        },
        "files": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS},
            "maxItems": MAX_FILES,
            "description": "Files the task is about (paths relative to the workspace).",
        },
        "weights": {
            "type": "array",
            "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "maxItems": MAX_FILES,
            "description": (
                "How sure each of files is, in (0, 1], in their order: 1 a file you know matters, under 1 a "
                "guess. Leave it out when you know every file."
            ),
        },
        "reasons": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_REASON_CHARS},
            "maxItems": MAX_FILES,
            "description": (
                "Why each of files was guessed, one line each in their order (with weights only): what the "
                "recalled fixes' reasons say of the file."
            ),
        },
        "error": {
            "type": "string",
            "description": (
                f"An error message or failing test line you are facing (over {MAX_ERROR_CHARS} characters "
                "it is trimmed)."
            ),
        },
        "session_id": {
            "type": "string",
            "maxLength": MAX_SESSION_ID_CHARS,
            "description": "The agent session's id, when the client knows it (else: the connection).",
        },
        "k": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_K,
            "default": DEFAULT_K,
            "description": f"At most this many fixes (default {DEFAULT_K}).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

SchemaFormat = Literal["openai", "anthropic", "mcp"]
SCHEMA_FORMATS: Final = ("openai", "anthropic", "mcp")


class ToolArgsError(InvalidInput):
    """Raised when the tool's arguments do not match its schema; the message says which and why."""


Path_ = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]


class RecallArgs(BaseModel):
    """The tool's arguments, validated as ``INPUT_SCHEMA`` describes them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    query: str = Field(min_length=1)  # trimmed, not refused, when longer than MAX_QUERY_CHARS
    files: list[Path_] = Field(default_factory=list, max_length=MAX_FILES)
    weights: list[Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]] | None = Field(
        default=None, max_length=MAX_FILES
    )
    reasons: list[str] | None = Field(default=None, max_length=MAX_FILES)
    error: str | None = None  # trimmed to MAX_ERROR_CHARS
    k: int = Field(default=DEFAULT_K, ge=1, le=MAX_K)
    session_id: str | None = Field(default=None, min_length=1, max_length=MAX_SESSION_ID_CHARS)

    @model_validator(mode="after")
    def _one_weight_and_reason_per_file(self) -> RecallArgs:
        service.check_weights(self.files, self.weights, self.reasons)  # ValueError: pydantic's message
        return self


def parse_args(args: Mapping[str, Any] | str | bytes | None) -> RecallArgs:
    """``args`` as ``RecallArgs``; a JSON string (OpenAI's ``arguments``) is decoded first.

    Raises ToolArgsError naming each bad field.
    """
    if isinstance(args, str | bytes):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError as exc:
            raise ToolArgsError(f"arguments are not valid JSON: {exc}") from exc
    if not isinstance(args, Mapping):
        raise ToolArgsError(f"arguments must be a JSON object, not {type(args).__name__}")
    try:
        return RecallArgs.model_validate(dict(args))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        )
        raise ToolArgsError(f"invalid {TOOL_NAME} arguments: {problems}") from exc


@dataclass(frozen=True)
class ToolContext:
    """Whose memory, which project, which checkout, and the settings the tool honours."""

    store: FixStore
    owner: str
    project_key: str
    workspace: str | None = None
    budget_tokens: int = DEFAULT_PROMPT_BUDGET_TOKENS
    enabled: bool = True
    auto_recall: bool = True
    notes_ceiling: int = DEFAULT_CEILING
    clock: Callable[[], float] = field(default=time.time)
    # The impact measurement (fixmem.mcp.session): the holdback share and salt, the hooks' session
    # directory (None: the arm is not recorded), and this connection's own session.
    holdback: float = 0.0
    holdback_salt: str = ""
    sessions_dir: str | None = None
    session_id: str = field(default_factory=lambda: "mcp-" + uuid.uuid4().hex)
    started: float = field(default_factory=time.time)
    # Where a query points in a checkout (``fixmem.runtime.localize.keeper.Keeper.localized``): None
    # while cold.
    localizer: Callable[[str, str], Sequence[Localized] | None] | None = None

    @classmethod
    def from_settings(
        cls, settings: Settings, store: FixStore, *, owner: str, project_key: str, workspace: str | None
    ) -> ToolContext:
        """A context with the budget, switches and notes ceiling of ``settings``."""
        return cls(
            store=store,
            owner=owner,
            project_key=project_key,
            workspace=workspace,
            budget_tokens=settings.fix_memory_prompt_budget_tokens,
            enabled=settings.fix_memory_enabled,
            auto_recall=settings.fix_memory_auto_recall,
            notes_ceiling=settings.notes_ceiling,
            holdback=settings.holdback,
            holdback_salt=settings.holdback_salt,
            sessions_dir=os.path.join(settings.data_dir, "hooks", "sessions"),
            localizer=_keeper(settings.data_dir) if settings.localize and workspace else None,
        )


def _keeper(data_dir: str | os.PathLike[str]) -> Callable[[str, str], Sequence[Localized] | None]:
    """``Keeper.localized`` over the hooks' index cache (``<data_dir>/hooks/localize``); a failure to
    build is logged, and recall goes on text only."""
    from fixmem.runtime.localize.keeper import Keeper  # noqa: PLC0415 - only with a checkout

    keeper = Keeper(os.path.join(data_dir, "hooks", "localize"), on_failure=lambda m: _log.warning("%s", m))
    return keeper.localized


@dataclass(frozen=True)
class ToolResult:
    """What the tool returns: ``text`` for the model, and the same as data."""

    text: str
    prompt_block: str
    fixes: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        """A JSON object (MCP ``structuredContent``)."""
        return {"prompt_block": self.prompt_block, "fixes": self.fixes}


def recall_fixes(ctx: ToolContext, args: Mapping[str, Any] | str | bytes | None) -> ToolResult:
    """The tool's handler: past fixes relevant to ``args`` (read-only).

    Raises ToolArgsError for bad arguments; StoreError when the store cannot be read.
    """
    parsed = parse_args(args)
    if not ctx.enabled:
        return ToolResult(DISABLED, "", [])
    errors = [parsed.error] if parsed.error else []
    question = service.Question(
        parsed.query, parsed.files, errors, parsed.k, ctx.workspace, parsed.weights, _localized(ctx, parsed),
        parsed.reasons,
    )  # fmt: skip
    found = service.recall(
        ctx.store, ctx.owner, ctx.project_key, question, budget_tokens=ctx.budget_tokens, now=ctx.clock()
    )
    if _arm(ctx, parsed.session_id, found.recalled) == HOLDBACK:  # recorded as the shadow, not shown
        return ToolResult(NOTHING_RELEVANT, "", [])
    return ToolResult(found.block or NOTHING_RELEVANT, found.block, [r.to_dict() for r in found.recalled])


def _localized(ctx: ToolContext, parsed: RecallArgs) -> Sequence[Localized] | None:
    """Where a call that names no file points in the checkout (None: not localized; text only). Never
    raises: localization is a bonus, never why a recall fails."""
    if ctx.localizer is None or ctx.workspace is None or parsed.files or parsed.weights is not None:
        return None
    try:
        return ctx.localizer(ctx.workspace, parsed.query)
    except Exception:  # a bug in it must not cost the recall
        _log.exception("localizing the query failed; recall on its text only")
        return None


def _arm(ctx: ToolContext, given: str | None, recalled: list[Recalled]) -> str:
    """The arm of the call's session, with ``recalled`` recorded in it (``fixmem.mcp.session``)."""
    where = (ctx.sessions_dir, ctx.owner, ctx.project_key)
    session_id = session_of(*where, given=given, connection=ctx.session_id, started=ctx.started)
    try:
        return record(*where, session_id, recalled, share=ctx.holdback, salt=ctx.holdback_salt)
    except OSError:  # the record cannot be kept: the arm is still the session's
        return arm_for(ctx.owner, ctx.project_key, session_id, share=ctx.holdback, salt=ctx.holdback_salt)


def auto_recall(
    ctx: ToolContext, user_message: str, *, files: Sequence[str] = (), errors: Sequence[str] = ()
) -> str:
    """The block to inject before a turn: project notes, then relevant past fixes, within the budget.

    "" when auto-recall or the memory is off, and when there is neither a note nor a relevant fix.
    Raises StoreError when the store cannot be read.
    """
    if not (ctx.enabled and ctx.auto_recall):
        return ""
    query = user_message.strip()
    now = ctx.clock()
    question = service.Question(query, files, errors, DEFAULT_K, ctx.workspace)
    found = query or files or errors
    recalled = service.find(ctx.store, ctx.owner, ctx.project_key, question, now=now) if found else []
    if recalled and _arm(ctx, None, recalled[:DEFAULT_K]) == HOLDBACK:
        recalled = []  # a holdback session: the notes only
    return service.render(
        recalled,
        ctx.budget_tokens,
        now=now,
        workspace=ctx.workspace,
        notes=True,
        notes_ceiling=ctx.notes_ceiling,
    )


def tool_schema(fmt: SchemaFormat) -> dict[str, Any]:
    """The tool definition in OpenAI (Chat Completions ``tools``), Anthropic or MCP ``tools/list`` form.

    Raises ValueError for an unknown format.
    """
    if fmt == "openai":
        return {
            "type": "function",
            "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": INPUT_SCHEMA},
        }
    if fmt == "anthropic":
        return {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": INPUT_SCHEMA}
    if fmt == "mcp":
        return {
            "name": TOOL_NAME,
            "title": TOOL_TITLE,
            "description": DESCRIPTION,
            "inputSchema": INPUT_SCHEMA,
            "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
        }
    raise ValueError(f"unknown tool schema format {fmt!r}: one of {', '.join(SCHEMA_FORMATS)}")
