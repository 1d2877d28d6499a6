"""The owner's pages: projects, entries, one entry, forget (with a confirmation), search as the agent sees it.

Every page reads the store under the viewer's owner only (the store is keyed by owner), so another
owner's project or entry is "not found", with the same words as a missing one, whatever the URL says.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Final
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from fixmem import service
from fixmem.api.context import ApiContext
from fixmem.limits import DEFAULT_K, MAX_ERROR_CHARS, MAX_FILES, MAX_K, MAX_PATH_CHARS, MAX_QUERY_CHARS
from fixmem.ui.chart import Chart, svg
from fixmem.ui.listing import PROJECT_SORTS, extras, project_table, verdict_rows
from fixmem.ui.review import configured_workspace
from fixmem.ui.web import PREFIX, Ctx, Posted, UiError, Who, failures, owner_of, redirect, render, state
from ingest.project_key import project_key_for
from store import FixEntry
from store.entry import ENTRY_ID_PATTERN
from store.history import regressions
from store.lineage import supersession
from store.listing import EntryFilter, page_number, paginate, table
from store.notes.workspace import known_commits
from store.redact import might_hold_secret, redact_obj
from store.staleness import stale_marks, workspace_checker
from store.summary import LogSummary

NOT_FOUND_PROJECT: Final = "no fix memory for this project"
NOT_FOUND_ENTRY: Final = "no such entry"
MAX_FORGET: Final = 500  # ids in one confirmation
_ID = re.compile(ENTRY_ID_PATTERN)

router = APIRouter(include_in_schema=False)


def shown(entry: FixEntry) -> FixEntry:
    """``entry`` with every string redacted (the store redacts on write; this is defence in depth)."""
    data = entry.model_dump()
    if not might_hold_secret(str(data)):
        return entry
    return FixEntry.model_validate(redact_obj(data))


def project_entries(ctx: Ctx, owner: str, project: str) -> list[FixEntry]:
    """The project's entries; UiError 404 when the owner has none there (or another owner has them)."""
    if not project:
        raise UiError(404, NOT_FOUND_PROJECT)
    with failures():
        found = ctx.store.read(owner, project).entries if ctx.store.has_project(owner, project) else []
    if not found:
        raise UiError(404, NOT_FOUND_PROJECT)
    return found


# -- projects ------------------------------------------------------------------------------------------


@router.get(f"{PREFIX}/projects")
def projects(request: Request, ctx: Ctx, who: Who) -> HTMLResponse:
    """Each project of the owner: counts, outcome ratios, outcomes over time, first and last activity."""
    owner = owner_of(who)
    templates = state(request).templates
    row_template = templates.get_template("_project_row.html")

    def draw(summary: LogSummary, chart: Chart | None) -> Markup:
        html = row_template.render(s=summary, svg=svg(chart))  # autoescaped like every template
        return Markup(html)  # noqa: S704 - the output of an autoescaped template

    with failures():
        rows = state(request).project_rows.of(ctx.store, owner, draw)
    text = request.query_params.get("q", "")[:MAX_PATH_CHARS]
    sort = request.query_params.get("sort", "")
    sort = sort if sort in PROJECT_SORTS else next(iter(PROJECT_SORTS))
    page = paginate(project_table(rows, text=text, sort=sort), page_number(request.query_params.get("page")))
    return render(
        request,
        who,
        "projects.html",
        page=page,
        total=len(rows),
        text=text,
        sort=sort,
        sorts=list(PROJECT_SORTS),
    )


# -- entries -------------------------------------------------------------------------------------------


@router.get(f"{PREFIX}/entries")
def entries(request: Request, ctx: Ctx, who: Who, project: str = "") -> Response:
    """A project's entries, newest first, filtered and paged (see ``store.listing``)."""
    owner = owner_of(who)
    if not project:
        return redirect(f"{PREFIX}/projects")
    found = project_entries(ctx, owner, project)
    params = dict(request.query_params)
    wanted, problems = EntryFilter.parse(params)
    page = paginate(table(found, wanted), page_number(params.get("page")))
    return render(
        request,
        who,
        "entries.html",
        project=project,
        wanted=wanted,
        problems=problems,
        page=page,
        rows=[shown(e) for e in page.items],
        total=len(found),
        superseded=supersession(found),
        regressed=regressions(found),
        forgot=int(params["forgot"]) if re.fullmatch(r"[0-9]{1,6}", params.get("forgot", "")) else None,
    )


@router.get(PREFIX + "/entry/{entry_id}")
def entry(request: Request, ctx: Ctx, who: Who, entry_id: str, project: str = "") -> HTMLResponse:
    """One entry: every field, its lineage, regression and staleness marks, its source event."""
    owner = owner_of(who)
    found = project_entries(ctx, owner, project)
    target = next((e for e in found if e.id == entry_id), None) if _ID.match(entry_id) else None
    if target is None:
        raise UiError(404, NOT_FOUND_ENTRY)
    with failures():
        chain = ctx.store.lineage(owner, project, entry_id)
    workspace = configured_workspace(ctx.settings, owner, project, key_of=project_key_for)
    stale: tuple[str, ...] | None = None
    if workspace is not None:
        stale = stale_marks(
            target, known_commits=known_commits(workspace), file_exists=workspace_checker(str(workspace))
        )
    return render(
        request,
        who,
        "entry.html",
        project=project,
        e=shown(target),
        lineage=[shown(e) for e in chain],
        superseded_by=supersession(found).get(entry_id),
        regressed_by=regressions(found).get(entry_id),
        stale=stale,
        workspace=workspace,
        extras=extras(shown(target)),
        verdicts=verdict_rows(target),
    )


# -- forget ----------------------------------------------------------------------------------------------


@router.post(f"{PREFIX}/forget")
def forget(request: Request, ctx: Ctx, who: Who, form: Posted) -> Response:
    """Ask to confirm forgetting the chosen entries; with ``confirm=yes``, forget them (gone from recall at
    once: the store rewrites the log and its index under the project's lock)."""
    owner = owner_of(who)
    project = form.get("project")
    found = {e.id: e for e in project_entries(ctx, owner, project)}
    ids = list(dict.fromkeys(i for i in form.getlist("ids") if i in found))[:MAX_FORGET]
    if not ids:
        raise UiError(422, "choose at least one entry of this project to forget")
    if form.get("confirm") != "yes":
        return render(request, who, "forget.html", project=project, chosen=[shown(found[i]) for i in ids])
    with failures():
        gone = sum(1 for i in ids if ctx.store.forget(owner, i))
    return redirect(f"{PREFIX}/entries?project={quoted(project)}&forgot={gone}")


def quoted(value: str) -> str:
    return quote(value, safe="")


# -- search as the agent sees it -----------------------------------------------------------------------


def _project_keys(ctx: Ctx, owner: str) -> list[str]:
    with failures():
        return ctx.store.projects(owner)


@router.get(f"{PREFIX}/search")
def search_form(request: Request, ctx: Ctx, who: Who, project: str = "") -> HTMLResponse:
    """The search form (a task, optional files and error)."""
    owner = owner_of(who)
    return render(
        request, who, "search.html", projects=_project_keys(ctx, owner), project=project,
        q="", files="", error="", k=DEFAULT_K, result=None, problem=None, reasons=[],
    )  # fmt: skip


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _search_problem(q: str, files: Sequence[str], error: str, k: int) -> str | None:
    if not q.strip():
        return "type a task"
    if len(q) > MAX_QUERY_CHARS:
        return f"the task is longer than {MAX_QUERY_CHARS} characters"
    if len(files) > MAX_FILES or any(len(f) > MAX_PATH_CHARS for f in files):
        return f"at most {MAX_FILES} files of at most {MAX_PATH_CHARS} characters"
    if len(error) > MAX_ERROR_CHARS:
        return f"the error is longer than {MAX_ERROR_CHARS} characters"
    if not 1 <= k <= MAX_K:
        return f"k is 1 to {MAX_K}"
    return None


def _recall(ctx: ApiContext, owner: str, project: str, question: service.Question) -> service.Recall:
    """The recall use case as ``POST /api/fix-memory`` runs it (the same budget, counted in the same
    metric); raises UiError: 404 when the project has no fixes, else the error table's status."""
    started = time.perf_counter()
    with failures():
        if not ctx.store.read(owner, project).entries:
            raise UiError(404, NOT_FOUND_PROJECT)
        budget = ctx.settings.fix_memory_prompt_budget_tokens
        found = service.recall(ctx.store, owner, project, question, budget_tokens=budget, now=ctx.clock())
    ctx.metrics.recall_duration.observe(time.perf_counter() - started)
    return found


@router.post(f"{PREFIX}/search")
def search(request: Request, ctx: Ctx, who: Who, form: Posted) -> HTMLResponse:
    """The exact prompt block the agent would get for this task, and each fix's score and reasons (the
    same call as ``POST /api/fix-memory``)."""
    owner = owner_of(who)
    project, q, error = form.get("project"), form.get("q"), form.get("error").strip()
    files = _lines(form.get("files"))
    try:
        k = int(form.get("k") or DEFAULT_K)
    except ValueError:
        k = 0
    problem = _search_problem(q, files, error, k)
    result = None
    if problem is None:
        try:
            result = _recall(ctx, owner, project, service.Question(q, files, [error] if error else [], k))
        except UiError as exc:
            problem = exc.message
    reasons = [r.reasons.summary() for r in (result.recalled if result else [])]
    return render(
        request, who, "search.html", projects=_project_keys(ctx, owner), project=project,
        q=q, files="\n".join(files), error=error, k=k or DEFAULT_K, result=result, problem=problem,
        reasons=reasons,
    )  # fmt: skip
