"""The fix entry: one line of a project's JSONL fix log, and how its id is made.

This is the on-disk contract shared by extraction (which makes entries) and the store (which keeps
them). Field names and meanings are fixed; unknown fields found in existing lines are preserved
(``extra="allow"``) so that a rewrite never loses what another writer added.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["fixed", "partial", "unverified"]
OUTCOMES: tuple[Outcome, ...] = ("fixed", "partial", "unverified")
ENTRY_ID_PATTERN = r"^fix-[0-9a-f]{16}$"


class TestRun(BaseModel):
    """The test run that decided the outcome: its command, whether it passed, its summary line."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(extra="allow")

    command: str
    ok: bool
    summary: str = ""


class FixEntry(BaseModel):
    """One recorded turn. Every field is present in every written line (``None`` where unknown)."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(pattern=ENTRY_ID_PATTERN)
    ts: float = Field(allow_inf_nan=False)  # unix seconds of the turn
    project: str  # the raw project key
    task: str
    files: list[str]
    symbols: list[str]
    errors: list[str]
    tests: TestRun | None
    outcome: Outcome
    solution: str
    tags: list[str]
    # Ours on top of the documented fields; absent in older lines, so they default to None.
    commit: str | None = None  # git HEAD at the turn
    event_id: str | None = None  # identity of the source turn
    extractor: str | None = None  # version of the extraction rules
    supersedes: str | None = None  # id of the entry this one replaces in meaning
    # Outcome provenance (``store.verdicts``): None in lines written before verdicts means agent-tests.
    outcome_source: str | None = None  # "agent-tests" | "verdict:<source>": what decided ``outcome``
    agent_outcome: Outcome | None = None  # the agent's own label, kept once a verdict decides ``outcome``
    verdict: dict[str, Any] | None = None  # the verdict in effect: {source, outcome, ts, detail}
    changes: list[str] | None = None  # what the fix changed: ``file · symbol: old → new`` lines, <= 5
    # Where the turn sits in git and which session made it, for linking verdicts (``workers.linker``).
    commit_start: str | None = None  # HEAD when the turn started
    commit_end: str | None = None  # HEAD when the turn ended
    dirty: bool | None = None  # uncommitted changes in the working tree when the turn ended
    session_id: str | None = None  # the agent session of the turn


# What identifies a recorded turn whatever the extraction rules: its time, its task, the files it changed
# and the commit. Not what the rules make of the turn (symbols, errors, tests, outcome, solution, tags,
# changes), which changes with ``extractor``: a re-import under a newer extractor must still find the turn
# (tests/fixtures/legacy-data, docs/decisions/0027-what-the-fix-was-and-whether-it-held.md).
# Same values, same turn.
# The store compares contents only between entries of imported turns (``IMPORTED_EVENT_PREFIX``): their
# ids are derived by fixmem's importers, whose rule changed once (ids no longer follow the log's path);
# an id a harness gives is its own word that two turns are distinct, even with the same content.
IMPORTED_EVENT_PREFIX = "bf-"
CONTENT_FIELDS = ("ts", "task", "files", "commit")


def content_key(entry: FixEntry) -> bytes | None:
    """16 bytes of SHA-256 over the ``CONTENT_FIELDS`` of an imported turn's entry (the same turn, whatever
    rule made its id); None for any other entry."""
    if not (entry.event_id or "").startswith(IMPORTED_EVENT_PREFIX):
        return None
    values = [getattr(entry, f) for f in CONTENT_FIELDS]  # a verdict changes none of these
    return hashlib.sha256(orjson.dumps(values)).digest()[:16]


def entry_id(owner: str, project_key: str, event_id: str) -> str:
    """``fix-`` + 16 hex of a hash over (owner, project key, event identity): same turn, same id."""
    material = "\x00".join((owner, project_key, event_id)).encode("utf-8", "surrogatepass")
    return "fix-" + hashlib.sha256(material).hexdigest()[:16]
