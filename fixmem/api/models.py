"""The API's response bodies (they are also its OpenAPI schema)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fixmem.limits import (
    DEFAULT_K,
    MAX_ERROR_CHARS,
    MAX_FILES,
    MAX_K,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
)
from ingest.links import VerdictLink
from ingest.schema import MAX_PROJECT_KEY_CHARS, MAX_VERDICT_DETAIL_CHARS, VerdictOutcome, VerdictSource
from store import FixEntry, Stats
from store.redact import redact
from store.summary import LogSummary

Weight = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
WEIGHTS_DESCRIPTION = (
    "How sure each of files is, in (0, 1], in their order: 1 a file known to matter, under 1 a guess (where "
    "the client localized the task in its checkout). Given (even empty), the task was localized there and "
    "recall is in workspace mode (a fix that touched no trusted file must be strong on its own); absent: "
    "text only, every file known."
)
Reason = Annotated[str, Field(max_length=MAX_REASON_CHARS)]
REASONS_DESCRIPTION = (
    "Why the client localized the task to each of files, in their order (needs weights; one line each; "
    "empty for a known file): what the recall reasons and the prompt block say of a fix that touched it. "
    "Absent: 'the client localized the task here'."
)


class RecallIn(BaseModel):
    """``POST /api/fix-memory``: a whole task text, with what is known mid-task."""

    model_config = ConfigDict(extra="forbid")

    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The task text (an issue, a PR).")
    files: list[Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]] = Field(
        default_factory=list, max_length=MAX_FILES, description="Files the task is about."
    )
    weights: list[Weight] | None = Field(default=None, max_length=MAX_FILES, description=WEIGHTS_DESCRIPTION)
    reasons: list[Reason] | None = Field(default=None, max_length=MAX_FILES, description=REASONS_DESCRIPTION)
    error: str | None = Field(default=None, max_length=MAX_ERROR_CHARS, description="An error the task hit.")
    k: int = Field(default=DEFAULT_K, ge=1, le=MAX_K, description="At most this many fixes.")
    project_id: str | None = Field(default=None, max_length=MAX_PROJECT_KEY_CHARS)
    workspace: str | None = Field(default=None, max_length=MAX_PROJECT_KEY_CHARS)

    @model_validator(mode="after")
    def _one_weight_per_file(self) -> RecallIn:
        if self.weights is not None and len(self.weights) != len(self.files):
            raise ValueError(
                f"{len(self.weights)} weights for {len(self.files)} files: give one weight per file"
            )
        return self


class VerdictIn(BaseModel):
    """``POST /api/verdicts``: a verdict event without ``v``, ``kind`` and ``owner`` (the token's)."""

    model_config = ConfigDict(extra="forbid")

    project_key: str = Field(min_length=1, max_length=MAX_PROJECT_KEY_CHARS, description="The project key.")
    outcome: VerdictOutcome = Field(description="fixed: the fix held; partial: it did not; unverified.")
    source: VerdictSource = Field(description="Who judged: revert, review, ci, benchmark or merged.")
    event_id: str = Field(default="", max_length=512, description="The judged turn's event_id, or:")
    entry_id: str = Field(default="", max_length=64, description="its entry id, or:")
    link: VerdictLink | None = Field(default=None, description="what the judge knows (commit, files, tests).")
    detail: str = Field(default="", max_length=MAX_VERDICT_DETAIL_CHARS, description="What it saw, one line.")
    ts: float | None = Field(default=None, description="When, unix seconds (default: now).")


class VerdictOut(BaseModel):
    """A verdict accepted: the stream id it was published as (the workers apply it)."""

    stream_id: str


class Problem(BaseModel):
    """An error: one readable sentence."""

    detail: str


class RecalledOut(BaseModel):
    """One recalled fix (redacted) with its score and what history says of it."""

    entry: FixEntry
    score: float = Field(description="Ranking score; higher is more relevant.")
    regressed: bool = Field(description="A later partial entry showed this fix did not hold.")
    regressed_by: str | None = None
    stale: list[str] = Field(default_factory=list)
    tier: str = Field(default="closely related", description='"closely related" or "possibly related".')
    reasons: dict[str, Any] = Field(
        default_factory=dict, description="What it shares with the task: symbols, paths, files, error, words."
    )


class RecallOut(BaseModel):
    """The recalled fixes, best first, and the prompt block ("" when nothing is relevant)."""

    project: str
    recalled: list[RecalledOut]
    prompt_block: str


class MalformedOut(BaseModel):
    """A line of the log that is not a valid entry."""

    line_no: int
    reason: str


class StatsOut(BaseModel):
    """One project's log at a glance (ratios in 0..1, timestamps in unix seconds)."""

    project: str
    total: int
    by_outcome: dict[str, int]
    ratios: dict[str, float]
    top_tags: list[tuple[str, int]]
    superseded: int
    regressed: int
    malformed: int
    malformed_lines: list[MalformedOut]
    oldest_ts: float | None
    newest_ts: float | None
    bytes: int


def stats_out(stats: Stats) -> StatsOut:
    """``stats`` as a response body; malformed-line reasons are redacted (they may quote the line)."""
    return StatsOut(
        project=stats.project,
        total=stats.total,
        by_outcome=dict(stats.by_outcome),
        ratios=dict(stats.ratios),
        top_tags=list(stats.top_tags),
        superseded=stats.superseded,
        regressed=stats.regressed,
        malformed=stats.malformed,
        malformed_lines=[
            MalformedOut(line_no=m.line_no, reason=redact(m.reason)) for m in stats.malformed_lines
        ],
        oldest_ts=stats.oldest_ts,
        newest_ts=stats.newest_ts,
        bytes=stats.bytes,
    )


class ProjectOut(BaseModel):
    """One of the owner's projects: how many fixes, their outcomes, first and last activity."""

    project: str
    total: int
    by_outcome: dict[str, int]
    ratios: dict[str, float]
    oldest_ts: float | None
    newest_ts: float | None


class ProjectsOut(BaseModel):
    """The token owner's projects that hold a fix, by project key."""

    projects: list[ProjectOut]


def projects_out(listed: list[LogSummary]) -> ProjectsOut:
    """The listing of ``FixStore.summaries`` (each project's summary file: no log parsed) as a body."""
    return ProjectsOut(
        projects=[
            ProjectOut(
                project=s.project or "",
                total=s.total,
                by_outcome=dict(s.by_outcome),
                ratios=dict(s.ratios),
                oldest_ts=s.oldest_ts,
                newest_ts=s.newest_ts,
            )
            for s in listed
        ]
    )


class ForgetOut(BaseModel):
    """The entry that was forgotten."""

    id: str
    forgotten: bool
