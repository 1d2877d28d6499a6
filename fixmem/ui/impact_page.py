"""The Impact page: does the memory help? Sessions with fix recall against the holdback arm
(``service.impact``, ``store.impact``); people asking are never held back."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from fixmem import service
from fixmem.ui.web import PREFIX, Ctx, UiError, Who, failures, owner_of
from fixmem.ui.web import render as render_page

router = APIRouter(include_in_schema=False)
WINDOWS = {"7d": 7 * 86400.0, "30d": 30 * 86400.0, "90d": 90 * 86400.0, "all": None}


@router.get(f"{PREFIX}/impact")
def impact(request: Request, ctx: Ctx, who: Who, project: str = "", since: str = "30d") -> Response:
    """Per arm: sessions, fixed ratios (outcome, verdicts, claims), follow rates; the lift, its interval."""
    owner = owner_of(who)
    if since not in WINDOWS:
        raise UiError(400, f"since must be one of {', '.join(WINDOWS)}")
    window = WINDOWS[since]
    with failures():
        projects = service.impact_projects(ctx.store, owner)
        if project and project not in projects:
            raise UiError(404, "no such project")
        found = service.impact(
            ctx.store,
            owner,
            project=project or None,
            since=None if window is None else ctx.clock() - window,
        )
    return render_page(
        request, who, "impact.html", report=found, data=found.to_dict(), projects=projects,
        project=project, since=since, windows=list(WINDOWS),
    )  # fmt: skip
