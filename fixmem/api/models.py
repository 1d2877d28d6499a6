"""The API's response bodies (they are also its OpenAPI schema)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from store import FixEntry, Stats
from store.redact import redact


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


def projects_out(listed: list[Stats]) -> ProjectsOut:
    """The listing of ``FixStore.project_stats`` as a response body."""
    return ProjectsOut(
        projects=[
            ProjectOut(
                project=s.project,
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
