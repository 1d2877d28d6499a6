"""The pipeline page, for operators only (``FIXMEM_API_OPS_TOKENS``): what ``fixmem status`` and
``fixmem dead-letters`` show, and replay / purge of dead letters after a confirmation.

A dead letter may hold no owner at all (a payload that is not JSON), so the page is not an owner's:
owners' tokens get 403. Payload previews are redacted and cut; the full payload stays in Redis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import redis
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from fixmem import wiring
from fixmem.api.context import ApiContext
from fixmem.ui.session import Viewer
from fixmem.ui.web import PREFIX, Ctx, Posted, UiError, Who, failures, redirect, render
from ingest import dead_letters
from ingest.dead_letters import DeadLetter
from store.redact import redact
from workers.counters import read_counters

PAGE_LETTERS: Final = 50
PREVIEW_CHARS: Final = 300
MAX_CHOSEN: Final = 500
_LETTER_ID = re.compile(r"\d{1,20}-\d{1,20}")

router = APIRouter(include_in_schema=False)


def _operator(who: Viewer) -> str:
    if who.operator is None:
        raise UiError(403, "the pipeline page is for operators' tokens (FIXMEM_API_OPS_TOKENS)")
    return who.operator


def _client(ctx: ApiContext) -> redis.Redis:
    if ctx.client is None:
        raise UiError(503, "no Redis is configured for this server (FIXMEM_REDIS_URL or `fixmem up`)")
    return ctx.client


@dataclass(frozen=True)
class LetterRow:
    """A dead letter as the page shows it: its fields and a redacted preview of its payload."""

    letter: DeadLetter
    preview: str


def preview(payload: bytes | None, limit: int = PREVIEW_CHARS) -> str:
    """The start of a payload as text, redacted (secrets a refused event carried stay off the page)."""
    if payload is None:
        return "(no payload)"
    text = redact(payload[: limit * 4].decode("utf-8", "replace"))
    return text if len(text) <= limit and len(payload) <= limit * 4 else text[:limit] + "…"


@router.get(f"{PREFIX}/pipeline")
def pipeline(  # noqa: PLR0917 (FastAPI passes query parameters by name)
    request: Request,
    ctx: Ctx,
    who: Who,
    reason: str = "",
    after: str = "",
    done: str = "",
    n: int = 0,
    kept: int = 0,
) -> HTMLResponse:
    """Streams (length, pending, lag, consumers), queues, workers, counters and the dead letters."""
    _operator(who)
    client = _client(ctx)
    settings = ctx.settings
    start = after if _LETTER_ID.fullmatch(after) else "-"
    with failures():
        status = wiring.pipeline_status(client, settings)
        counters = read_counters(client)
        letters = dead_letters.list_letters(
            client, settings.dead_stream, count=PAGE_LETTERS, after=start, reason=reason or None
        )
    rows = [LetterRow(letter, preview(letter.payload)) for letter in letters]
    return render(
        request, who, "pipeline.html", pipe=status, counters=counters, rows=rows, reason=reason,
        dead_stream=settings.dead_stream, more=len(letters) == PAGE_LETTERS, message=_message(done, n, kept),
    )  # fmt: skip


def _message(done: str, n: int, kept: int) -> str | None:
    """What the last action did (built here: the query string carries only a word and numbers)."""
    if done == "purged":
        return f"Purged {n} dead letter(s)."
    if done == "replayed":
        still = f"; {kept} kept (still invalid, or no payload)" if kept else ""
        return f"Replayed {n} dead letter(s) to their origin stream{still}."
    return None


@router.post(f"{PREFIX}/pipeline/dead-letters")
def act(request: Request, ctx: Ctx, who: Who, form: Posted) -> Response:
    """Confirm, then replay (re-publish to the origin stream, validated) or purge the chosen dead letters
    (or all of them)."""
    _operator(who)
    client = _client(ctx)
    action = form.get("action")
    if action not in {"replay", "purge"}:
        raise UiError(422, "action is replay or purge")
    everything = form.get("all") == "yes"
    ids = list(dict.fromkeys(i for i in form.getlist("ids") if _LETTER_ID.fullmatch(i)))[:MAX_CHOSEN]
    if not everything and not ids:
        raise UiError(422, "choose at least one dead letter, or all of them")
    stream = ctx.settings.dead_stream
    with failures():
        if everything:
            chosen = list(dead_letters.iter_letters(client, stream))
        else:
            chosen = [x for x in (dead_letters.get_letter(client, stream, i) for i in ids) if x is not None]
        if form.get("confirm") != "yes":
            return render(
                request, who, "pipeline_confirm.html", action=action, everything=everything,
                rows=[LetterRow(x, preview(x.payload, 120)) for x in chosen[:MAX_CHOSEN]], total=len(chosen),
            )  # fmt: skip
        if action == "purge":
            gone = dead_letters.purge(client, stream, None if everything else [x.id for x in chosen])
            return redirect(f"{PREFIX}/pipeline?done=purged&n={gone}")
        result = dead_letters.replay(
            client, stream, chosen, validate=True, max_bytes=ctx.settings.max_event_bytes
        )
    kept = len(result.still_invalid) + len(result.no_payload)
    return redirect(f"{PREFIX}/pipeline?done=replayed&n={len(result.replayed)}&kept={kept}")
