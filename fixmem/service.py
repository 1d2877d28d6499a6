"""The two use cases every surface calls: ``recall`` (past fixes for a task, and their prompt block) and
``record`` (turns in, fix entries appended).

The Python API (``fixmem.memory``), the ``recall_fixes`` tool and MCP, the HTTP API, the CLI and the
hooks (their recall daemon and in-process reader; their local publisher) are adapters: they parse their
input, resolve the owner and project (``fixmem.identity``), build the store (``fixmem.wiring``,
``fixmem.hooks.stores``) and call one of these, so the same question gets the same ranked list and the
same block whichever way it came in. The pipeline's workers record through ``workers.jobs`` (their own
batching and metrics), with the same extraction.

Values in, values out: the store and ``now`` are given; the defaults (``k``, the bounds) are
``fixmem.limits``', the budget the caller's setting (``Settings.fix_memory_prompt_budget_tokens``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from fixmem.limits import (
    DEFAULT_K,
    DEFAULT_PROMPT_BUDGET_TOKENS,
    MAX_ERROR_CHARS,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
)
from ingest.schema import TurnEvent
from store import FixEntry, FixStore, Recalled, fit_query, prompt_block
from store.impact import ImpactReport, SessionOutcome, sessions_of
from store.impact import report as impact_report
from store.localize import Localized
from store.notes.render import DEFAULT_CEILING
from store.notes.workspace import workspace_prompt_block
from store.summary import LogSummary


@dataclass(frozen=True)
class Question:
    """What to recall for: the task text, files it is about, errors it hit, at most ``k`` fixes, and the
    checkout (``workspace``: fixes whose files are gone there are marked stale; None: not checked).

    Localization (workspace mode, ``store.recall.localized``): ``localized``, the files of the checkout
    the task was localized to with how sure and why (what an in-process caller passes; () when it found
    none), or ``weights`` (the surfaces' form): how sure each of ``files`` is, in (0, 1] — 1 a known file,
    under 1 a file the client localized the task to, with ``reasons``, why (what its recall reasons say;
    empty or absent: ``CLIENT_LOCALIZED``). Either one given (even empty) means the task was localized;
    both None: text only, as without a checkout."""

    query: str
    files: Sequence[str] = ()
    errors: Sequence[str] = ()
    k: int = DEFAULT_K
    workspace: str | None = None
    weights: Sequence[float] | None = None
    localized: Sequence[Localized] | None = None
    reasons: Sequence[str] | None = None


CLIENT_LOCALIZED = "the client localized the task here"  # the reason of a file sent with a weight under 1


def check_weights(
    files: Sequence[str], weights: Sequence[float] | None, reasons: Sequence[str] | None = None
) -> None:
    """Raises ValueError unless ``weights`` is None or gives each of ``files`` a weight in (0, 1], and
    ``reasons`` is None or gives each weighed file one line of at most ``MAX_REASON_CHARS``."""
    if weights is None:
        if reasons is not None:
            raise ValueError("reasons without weights: a reason says why a weighed file was chosen")
        return
    if len(weights) != len(files):
        raise ValueError(f"{len(weights)} weights for {len(files)} files: give one weight per file, or none")
    for path, weight in zip(files, weights, strict=True):
        if not (isinstance(weight, int | float) and 0.0 < weight <= 1.0):  # NaN fails too
            raise ValueError(f"the weight of {path} is {weight!r}: a weight is a number in (0, 1]")
    if reasons is None:
        return
    if len(reasons) != len(files):
        raise ValueError(f"{len(reasons)} reasons for {len(files)} files: give one reason per file, or none")
    for path, reason in zip(files, reasons, strict=True):
        if len(reason) > MAX_REASON_CHARS or not reason.isprintable():
            raise ValueError(
                f"the reason of {path} is not one line of at most {MAX_REASON_CHARS} printable characters"
            )


def weighed(question: Question) -> tuple[list[str], list[Localized] | None]:
    """The known files of ``question`` and where it was localized (``localized``, then the files of weight
    under 1; None: not localized). Raises ValueError on bad weights (``check_weights``)."""
    check_weights(question.files, question.weights, question.reasons)
    if question.weights is None:
        return list(question.files), None if question.localized is None else list(question.localized)
    why = question.reasons or [""] * len(question.files)
    triples = list(zip(question.files, question.weights, why, strict=True))
    guessed = [Localized(f, float(w), r.strip() or CLIENT_LOCALIZED) for f, w, r in triples if w < 1.0]
    return [f for f, w, _ in triples if w >= 1.0], [*(question.localized or ()), *guessed]


@dataclass(frozen=True)
class Recall:
    """What ``recall`` found: the fixes, best first, and the "Past fixes in this project" block ("" for
    none)."""

    recalled: list[Recalled]
    block: str

    def ranked(self) -> list[tuple[str, float, str]]:
        """(id, score, tier) of each fix, best first: what every surface must agree on."""
        return [(r.entry.id, r.score, r.tier) for r in self.recalled]


def find(store: FixStore, owner: str, project: str, question: Question, *, now: float) -> list[Recalled]:
    """The fixes of ``owner``'s ``project`` relevant to ``question``, best first (the query and errors
    fitted to ``MAX_QUERY_CHARS`` / ``MAX_ERROR_CHARS`` as every surface fits them).

    Raises StoreError when the log cannot be read, InvalidKey for an unusable owner or project key,
    ValueError on bad weights.
    """
    files, localized = weighed(question)
    return store.recall(
        owner,
        project,
        fit_query(question.query, MAX_QUERY_CHARS),
        files=files,
        errors=[fit_query(error, MAX_ERROR_CHARS) for error in question.errors],
        k=question.k,
        workspace=question.workspace,
        now=now,
        localized=localized,
    )


def render(
    recalled: Sequence[Recalled] | Sequence[FixEntry],
    budget_tokens: int = DEFAULT_PROMPT_BUDGET_TOKENS,
    *,
    now: float,
    workspace: str | None = None,
    notes: bool = False,
    notes_ceiling: int = DEFAULT_CEILING,
    known_commits: Collection[str] | None = None,
) -> str:
    """The prompt block of ``recalled`` within ``budget_tokens``; ``notes``: the workspace's hand-written
    notes (``.fixmem/memory.md``) first. With a ``workspace``, fixes whose files are gone there are marked
    stale. "" when there is nothing to show."""
    if notes and workspace:
        return workspace_prompt_block(
            workspace, recalled, budget_tokens, now=now, ceiling=notes_ceiling, known_commits=known_commits
        )
    return prompt_block(recalled, budget_tokens, known_commits=known_commits, workspace=workspace, now=now)


def recall(
    store: FixStore,
    owner: str,
    project: str,
    question: Question,
    *,
    now: float,
    budget_tokens: int = DEFAULT_PROMPT_BUDGET_TOKENS,
) -> Recall:
    """The recall use case: ``find`` then ``render`` (no notes). Raises as ``find``."""
    recalled = find(store, owner, project, question, now=now)
    return Recall(recalled, render(recalled, budget_tokens, now=now, workspace=question.workspace))


def record(store: FixStore, events: Sequence[TurnEvent], *, enabled: bool = True) -> list[FixEntry | None]:
    """The record use case: extract each event's fix entry and append them, one append per (owner,
    project). For each event, in order: its entry as the log holds it (the one written, or the one
    extracted when the log had it already), or None (no fix in the turn, the memory off, or an entry
    ``forget`` deleted: a forgotten turn is not written again).

    Raises StoreError when a log cannot be written.
    """
    from workers import sessions  # noqa: PLC0415 - the extraction core: only when recording
    from workers.extraction import extract  # noqa: PLC0415 - the same

    results = [extract(event, enabled=enabled) for event in events]
    extracted = [r.entry for r in results]
    sessions.record_turns(store, events, [r.skip for r in results])  # turns with no entry, for impact
    by_project: dict[tuple[str, str], list[FixEntry]] = {}
    for event, entry in zip(events, extracted, strict=True):
        if entry is not None:
            by_project.setdefault((event.owner, event.project_key), []).append(entry)
    written: dict[str, FixEntry] = {}
    forgotten: set[str] = set()
    for (owner, project), entries in by_project.items():
        result = store.append(owner, project, entries)
        written.update((e.id, e) for e in result.added)
        forgotten.update(result.forgotten)
    return [
        None if entry is None or entry.id in forgotten else written.get(entry.id, entry)
        for entry in extracted
    ]


def impact(
    store: FixStore,
    owner: str,
    *,
    project: str | None = None,
    since: float | None = None,
    effect: float = 0.10,
) -> ImpactReport:
    """Does the memory help: the sessions of ``owner`` (in ``project``, else every project) that ended at
    or after ``since``, by assigned arm (``store.impact``), those whose turns made no entry included
    (``store.sessions``). Never held back: people asking. Raises StoreError when a file cannot be read."""
    if project:
        found = sessions_of(
            store.read(owner, project).entries, since=since, records=store.sessions(owner, project)
        )
        return impact_report(found, effect=effect)
    return impact_report(_sessions(store, owner, since), effect=effect)


def impact_projects(store: FixStore, owner: str) -> list[str]:
    """The projects of ``owner`` with entries or with sessions that made none. Raises StoreError."""
    return sorted({*store.projects(owner), *store.session_projects(owner)})


def _sessions(store: FixStore, owner: str, since: float | None) -> list[SessionOutcome]:
    """The sessions of every project of ``owner``: from their entries and their session records."""
    records = store.session_records(owner)
    found: list[SessionOutcome] = []
    for project in sorted({*store.projects(owner), *records}):
        entries = store.read(owner, project).entries if store.has_project(owner, project) else []
        found += sessions_of(entries, since=since, records=records.get(project, ()))
    return found


def fleet_impact(store: FixStore, owners: Collection[str], *, since: float | None = None) -> ImpactReport:
    """``impact`` over every project of ``owners`` (the metrics' fleet view). Raises StoreError."""
    sessions = []
    for owner in sorted(owners):
        sessions += _sessions(store, owner, since)
    return impact_report(sessions)


def fleet_summaries(store: FixStore, owners: Collection[str]) -> list[LogSummary]:
    """The ``LogSummary`` of every project of ``owners`` (the metrics' claimed and verified counts), from
    the summary files. Raises StoreError."""
    return [summary for owner in sorted(owners) for summary in store.summaries(owner)]
