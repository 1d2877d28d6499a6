"""The review queue page: suggested notes to approve (perhaps edited) or reject (``store.notes.review``)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import Response

from fixmem.api.context import ApiContext
from fixmem.ui.pages import project_entries, quoted
from fixmem.ui.review import configured_workspace
from fixmem.ui.web import PREFIX, SECURITY_HEADERS, Ctx, Posted, UiError, Who, failures, owner_of, redirect
from fixmem.ui.web import render as render_page
from ingest.project_key import project_key_for
from store import FixEntry
from store.history import regressions
from store.notes import (
    KINDS,
    MemoryFile,
    Note,
    NoteRejected,
    format_note,
    new_note,
    note_from_fix,
    promoted_ids,
    suggest_notes,
)
from store.notes.review import notes_file, pending, read_state, state_path, update_state
from store.notes.workspace import append_note, git_head, memory_path, read_memory

router = APIRouter(include_in_schema=False)


def _today(ctx: ApiContext) -> date:
    return datetime.fromtimestamp(ctx.clock(), tz=UTC).date()


def _workspace(ctx: ApiContext, owner: str, project: str) -> Path | None:
    return configured_workspace(ctx.settings, owner, project, key_of=project_key_for)


@router.get(f"{PREFIX}/review")
def review(request: Request, ctx: Ctx, who: Who, project: str = "", done: str = "") -> Response:
    """The project's suggested notes nobody answered yet, each with its draft note to edit."""
    owner = owner_of(who)
    if not project:
        with failures():
            keys = ctx.store.projects(owner)
        return render_page(request, who, "review_pick.html", projects=keys)
    found = project_entries(ctx, owner, project)
    workspace = _workspace(ctx, owner, project)
    with failures():
        memory = (read_memory(workspace) if workspace else None) or MemoryFile()
        reviewed = read_state(state_path(ctx.settings.data_dir, owner, project))
    suggestions = pending(
        suggest_notes(found, regressed=regressions(found), already_promoted=promoted_ids(memory)), reviewed
    )
    by_id = {e.id: e for e in found}
    today = _today(ctx)
    drafts = []
    for item in suggestions:
        note = note_from_fix(by_id[item.fix_id], item.kind, learned=today, commit=None, subject=item.subject)
        drafts.append((item, note.body))
    return render_page(
        request, who, "review.html", project=project, drafts=drafts, kinds=KINDS,
        approved=len(reviewed.approved), rejected=len(reviewed.rejected), done=done,
        memory=memory_path(workspace) if workspace else None,
    )  # fmt: skip


@router.post(f"{PREFIX}/review")
def answer(request: Request, ctx: Ctx, who: Who, form: Posted) -> Response:
    """Approve (write the note to the workspace, else keep it for the download) or reject a suggestion."""
    owner = owner_of(who)
    project, fix_id, action = form.get("project"), form.get("fix_id"), form.get("action")
    target = next((e for e in project_entries(ctx, owner, project) if e.id == fix_id), None)
    if target is None:
        raise UiError(404, "no such entry")
    path = state_path(ctx.settings.data_dir, owner, project)
    back = f"{PREFIX}/review?project={quoted(project)}"
    if action == "reject":
        with failures():
            update_state(path, lambda s: s.reject(fix_id))
        return redirect(back + "&done=rejected")
    if action != "approve":
        raise UiError(422, "action is approve or reject")
    workspace = _workspace(ctx, owner, project)
    try:
        note = _note(
            target, kind=form.get("kind"), subject=form.get("subject"), body=form.get("body"), ctx=ctx,
            workspace=workspace,
        )  # fmt: skip
    except NoteRejected as exc:
        raise UiError(422, f"the note was refused: {exc}") from exc
    with failures():
        if workspace is not None:
            append_note(workspace, note)
            update_state(path, lambda s: None)  # nothing to keep: memory.md names the fix now
            return redirect(back + "&done=written")
        text = format_note(note)
        update_state(path, lambda s: s.approve(fix_id, text))
    return redirect(back + "&done=approved")


def _note(
    entry: FixEntry, *, kind: str, subject: str, body: str, ctx: ApiContext, workspace: Path | None
) -> Note:
    """The note as edited; its body names the fix (so the suggestion is answered there too)."""
    if entry.id not in body:
        body = body.rstrip() + f"\nPromoted from {entry.id}."
    commit = entry.commit or (git_head(workspace) if workspace else None)
    return new_note(kind, subject, body, learned=_today(ctx), commit=commit)


@router.get(f"{PREFIX}/review/memory.md")
def download(request: Request, ctx: Ctx, who: Who, project: str = "") -> Response:
    """The approved notes of a project as a ``.fixmem/memory.md`` (to add to the repository)."""
    owner = owner_of(who)
    project_entries(ctx, owner, project)
    with failures():
        text = notes_file(read_state(state_path(ctx.settings.data_dir, owner, project)))
    headers = {**SECURITY_HEADERS, "Content-Disposition": 'attachment; filename="memory.md"'}
    return Response(text.encode(), media_type="text/markdown; charset=utf-8", headers=headers)
