"""The HTTP API (FastAPI): an owner's fix memory over HTTP, plus health, readiness and metrics.

Routes (``Authorization: Bearer <token>`` on ``/api/…``; the token says whose memory it is):

- ``GET /api/fix-memory?workspace=&project_id=&q=&files=&weights=&reasons=&error=&k=`` -> the recalled
  entries and the prompt block (``weights``: how sure each file is, in (0, 1]; under 1: where the client
  localized the task, ``reasons``: why); ``POST /api/fix-memory`` with a JSON body ``{q, files, weights,
  reasons, error, k, project_id, workspace}``
  does the same for a whole task text (up to ``fixmem.limits.MAX_QUERY_CHARS``, which no URL carries)
- ``GET /api/fix-memory/stats?workspace=&project_id=`` -> the project's stats
- ``DELETE /api/fix-memory/{id}`` -> forget one entry
- ``GET /api/projects`` -> the owner's projects: fixes, outcome ratios, first and last activity
- ``POST /api/verdicts`` with a verdict event's body (owner: the token's) -> published to the stream, 202
- ``/ui``: the web UI for people (``fixmem.ui``, mounted by ``fixmem.api.server``), with the same tokens
- ``GET /schema/turn-event.json`` -> the JSON Schema of the v1 turn event (no token)
- ``GET /schema/verdict-event.json`` -> the JSON Schema of the v1 verdict event (no token)
- ``GET /healthz`` (the process answers), ``/readyz`` (Redis answers, the data dir is writable),
  ``/metrics`` (Prometheus), ``/openapi.json``, ``/docs`` and ``/redoc`` (their assets from this server)

The project key is ``project_id`` if given, else the key the owner's events from ``workspace`` carried
(recorded by the consumer: ``ingest.workspaces``), else ``workspace`` itself. No or an unknown token:
401. A project or entry of another owner is 404 with the same body as a missing one (the store is keyed
by owner, so another owner's data is never even looked at). Out-of-bounds input: 422 with one readable
message.
The API reads no file of the caller's workspace: ``workspace`` is only a key here (the server's disk is
not the agent's; checking paths there would be an oracle on the server's files).
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from enum import Enum
from typing import Annotated, Any, Final

import redis
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from fixmem import service
from fixmem.api.context import ApiContext, store_errors
from fixmem.api.models import (
    REASONS_DESCRIPTION,
    WEIGHTS_DESCRIPTION,
    ForgetOut,
    Problem,
    ProjectsOut,
    RecalledOut,
    RecallIn,
    RecallOut,
    StatsOut,
    VerdictIn,
    VerdictOut,
    projects_out,
    stats_out,
)
from fixmem.limits import (
    DEFAULT_K,
    MAX_ERROR_CHARS,
    MAX_FILES,
    MAX_GET_QUERY_CHARS,
    MAX_K,
    MAX_PATH_CHARS,
    MAX_REASON_CHARS,
)
from ingest.publish import publish_many
from ingest.schema import KIND_VERDICT, MAX_PROJECT_KEY_CHARS, WIRE_VERSION, validate_any
from ingest.schema_doc import turn_event_json_schema, verdict_event_json_schema
from ingest.workspaces import project_key_of
from store.entry import ENTRY_ID_PATTERN
from store.paths import canonical_key

log = logging.getLogger("fixmem.api")

MAX_ENTRY_ID_CHARS: Final = 64
NOT_FOUND_PROJECT: Final = "no fix memory for this project"
NOT_FOUND_ENTRY: Final = "no such entry"
UNAUTHORIZED: Final = "missing or unknown bearer token"
DOCS_ASSETS_URL: Final = "/docs-assets"  # Swagger UI's and ReDoc's files, from the fastapi-offline package


_bearer = HTTPBearer(auto_error=False, description="A token of FIXMEM_API_TOKENS; it names the owner.")
_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": UNAUTHORIZED},
    404: {"model": Problem, "description": "Not found (or another owner's: the two are indistinguishable)"},
    422: {"model": Problem, "description": "A parameter is missing or out of bounds"},
    503: {"model": Problem, "description": "The store or Redis is unavailable"},
}


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = (
            ".".join(str(p) for p in err.get("loc", ()) if p not in ("query", "path", "body")) or "request"
        )
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def _context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.ctx
    return ctx


Ctx = Annotated[ApiContext, Depends(_context)]


def _owner(ctx: Ctx, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> str:
    """The owner the bearer token stands for; 401 without one."""
    who = ctx.tokens.owner(creds.credentials if creds is not None else None)
    if who is None:
        raise HTTPException(401, UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
    return who


Owner = Annotated[str, Depends(_owner)]


def _project_key(
    ctx: Ctx,
    who: Owner,
    workspace: Annotated[
        str | None,
        Query(
            max_length=MAX_PROJECT_KEY_CHARS,
            description="The agent's workspace: the project key its events carried, else the path itself.",
        ),
    ] = None,
    project_id: Annotated[
        str | None, Query(max_length=MAX_PROJECT_KEY_CHARS, description="The project key of the events.")
    ] = None,
) -> str:
    """``project_id`` if given, else the key ``workspace``'s events carried (``ingest.workspaces``), else
    ``workspace`` itself (keys of events that had none but their path); 422 without either."""
    return _resolve_key(ctx, who, project_id, workspace)


def _resolve_key(ctx: ApiContext, who: str, project_id: str | None, workspace: str | None) -> str:
    """See ``_project_key``."""
    if project_id and project_id.strip():
        return project_id
    if not workspace or not workspace.strip():
        raise HTTPException(422, "give project_id or workspace (the project key of the events)")
    if ctx.client is None:
        return workspace
    with store_errors():
        return project_key_of(ctx.client, who, workspace) or workspace


ProjectKey = Annotated[str, Depends(_project_key)]
TAGS: list[str | Enum] = ["fix memory"]
router = APIRouter()


@router.get("/api/fix-memory", response_model=RecallOut, responses=_ERRORS, tags=TAGS)
def recall(  # noqa: PLR0917 (FastAPI passes query parameters by name)
    ctx: Ctx,
    who: Owner,
    key: ProjectKey,
    q: Annotated[str, Query(min_length=1, max_length=MAX_GET_QUERY_CHARS, description="The task at hand.")],
    files: Annotated[
        list[Annotated[str, Query(min_length=1, max_length=MAX_PATH_CHARS)]],
        Query(max_length=MAX_FILES, description="Files the task is about (repeat the parameter)."),
    ] = [],  # noqa: B006 (FastAPI copies defaults)
    error: Annotated[
        str | None, Query(max_length=MAX_ERROR_CHARS, description="An error the task hit.")
    ] = None,
    k: Annotated[int, Query(ge=1, le=MAX_K, description="At most this many fixes.")] = DEFAULT_K,
    weights: Annotated[
        list[Annotated[float, Query(gt=0, le=1, allow_inf_nan=False)]],
        Query(max_length=MAX_FILES, description=WEIGHTS_DESCRIPTION + " Repeat it as files."),
    ] = [],  # noqa: B006 (FastAPI copies defaults)
    reasons: Annotated[
        list[Annotated[str, Query(max_length=MAX_REASON_CHARS)]],
        Query(max_length=MAX_FILES, description=REASONS_DESCRIPTION + " Repeat it as files."),
    ] = [],  # noqa: B006 (FastAPI copies defaults)
) -> RecallOut:
    """Past fixes of the project relevant to ``q``, best first, and the prompt block to inject."""
    return recall_fixes_for(
        ctx, who, key, q, files=files, error=error, k=k, weights=weights or None, reasons=reasons or None
    )


@router.post("/api/fix-memory", response_model=RecallOut, responses=_ERRORS, tags=TAGS)
def recall_post(ctx: Ctx, who: Owner, body: RecallIn) -> RecallOut:
    """The same as GET for a whole task text in a JSON body (a URL cannot carry 16,384 characters)."""
    key = _resolve_key(ctx, who, body.project_id, body.workspace)
    return recall_fixes_for(
        ctx, who, key, body.q, files=body.files, error=body.error, k=body.k, weights=body.weights,
        reasons=body.reasons,
    )  # fmt: skip


def recall_fixes_for(
    ctx: ApiContext,
    who: str,
    key: str,
    q: str,
    *,
    files: list[str],
    error: str | None,
    k: int,
    weights: list[float] | None = None,
    reasons: list[str] | None = None,
) -> RecallOut:
    """``who``'s past fixes for a task in project ``key``: the block, each fix's score, tier and reasons
    (the recall routes and the web UI's search page). 404 when the project has no entries, 422 when
    ``weights`` does not give each file one weight in (0, 1], or ``reasons`` one line each."""
    started = time.perf_counter()
    now = ctx.clock()
    try:
        service.check_weights(files, weights, reasons)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    with store_errors():
        if not ctx.store.read(who, key).entries:
            raise HTTPException(404, NOT_FOUND_PROJECT)
        question = service.Question(q, files, [error] if error else [], k, weights=weights, reasons=reasons)
        budget = ctx.settings.fix_memory_prompt_budget_tokens
        found = service.recall(ctx.store, who, key, question, budget_tokens=budget, now=now)
    ctx.metrics.recall_duration.observe(time.perf_counter() - started)
    return RecallOut(
        project=canonical_key(key),  # a secret in the caller's key is not echoed back
        recalled=[
            RecalledOut(
                entry=r.entry, score=r.score, regressed=r.regressed, regressed_by=r.regressed_by,
                stale=list(r.stale), tier=r.tier, reasons=r.reasons.to_dict(),
            )
            for r in found.recalled
        ],
        prompt_block=found.block,
    )  # fmt: skip


@router.get("/api/fix-memory/stats", response_model=StatsOut, responses=_ERRORS, tags=TAGS)
def stats(ctx: Ctx, who: Owner, key: ProjectKey) -> StatsOut:
    """Counts, outcome ratios, top tags, superseded/regressed/malformed counts of the project's log."""
    with store_errors():
        value = ctx.store.stats(who, key)
    if value.total == 0:
        raise HTTPException(404, NOT_FOUND_PROJECT)
    return stats_out(value)


@router.get("/api/projects", response_model=ProjectsOut, responses=_ERRORS, tags=TAGS)
def projects(ctx: Ctx, who: Owner) -> ProjectsOut:
    """The token owner's projects that hold a fix: counts, outcome ratios, first and last activity."""
    with store_errors():
        return projects_out(ctx.store.summaries(who))


@router.delete("/api/fix-memory/{entry_id}", response_model=ForgetOut, responses=_ERRORS, tags=TAGS)
def forget(
    ctx: Ctx,
    who: Owner,
    entry_id: Annotated[
        str, Path(pattern=ENTRY_ID_PATTERN, max_length=MAX_ENTRY_ID_CHARS, description="fix-<16 hex digits>")
    ],
) -> ForgetOut:
    """Delete one entry from the owner's fix logs (under the same lock the workers take)."""
    with store_errors():
        if not ctx.store.forget(who, entry_id):
            raise HTTPException(404, NOT_FOUND_ENTRY)
    log.info("owner %s forgot %s", who, entry_id)
    return ForgetOut(id=entry_id, forgotten=True)


@router.post("/api/verdicts", status_code=202, response_model=VerdictOut, responses=_ERRORS, tags=TAGS)
def verdict(ctx: Ctx, who: Owner, body: VerdictIn) -> VerdictOut:
    """Publish a verdict (by CI, a review, git) on the owner's turn, named by id or by ``link``, to the
    stream the workers read; 503 without Redis, 422 naming the refused field."""
    event = {
        "v": WIRE_VERSION, "kind": KIND_VERDICT, "owner": who,
        **body.model_dump(mode="json", exclude_none=True),
        "ts": body.ts if body.ts is not None else ctx.clock(),
    }  # fmt: skip
    if ctx.client is None:
        raise HTTPException(503, "no Redis configured: verdicts go through the stream (FIXMEM_REDIS_URL)")
    with store_errors():
        [stream_id] = publish_many(ctx.client, [validate_any(event)], stream=ctx.settings.stream)
    return VerdictOut(stream_id=stream_id)


@router.get("/schema/turn-event.json", tags=["ops"])
def turn_event_schema() -> dict[str, Any]:
    """The JSON Schema of the v1 turn event (what a harness publishes); no token needed."""
    return turn_event_json_schema()


@router.get("/schema/verdict-event.json", tags=["ops"])
def verdict_event_schema() -> dict[str, Any]:
    """The JSON Schema of the v1 verdict event (what CI or a benchmark publishes); no token needed."""
    return verdict_event_json_schema()


@router.get("/healthz", tags=["ops"])
def healthz() -> dict[str, str]:
    """200 while the process serves requests."""
    return {"status": "ok"}


@router.get("/readyz", tags=["ops"], responses={503: {"description": "A dependency is down"}})
def readyz(ctx: Ctx) -> JSONResponse:
    """200 when Redis answers and the data directory is writable; 503 with the failed checks."""
    checks = {"redis": _check_redis(ctx.client), "data_dir": _check_writable(ctx.settings.data_dir)}
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not ready", "checks": checks}, status_code=200 if ready else 503
    )


@router.get("/metrics", tags=["ops"], response_class=Response)
def metrics(ctx: Ctx) -> Response:
    """Prometheus exposition: fleet metrics read from Redis now, and this process's own."""
    return Response(generate_latest(ctx.metrics.registry), media_type=CONTENT_TYPE_LATEST)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": _validation_message(exc)}, status_code=422)


Mount = Callable[[FastAPI, ApiContext], None]


def create_app(ctx: ApiContext, mounts: Sequence[Mount] = ()) -> FastAPI:
    """The FastAPI application serving ``ctx``; ``mounts`` add the routes of the faces served beside the
    API (the web UI: ``fixmem.ui.mount``, which ``fixmem.api.server`` passes)."""
    app = FastAPIOffline(  # /docs and /redoc load their assets from this server (offline too)
        static_url=DOCS_ASSETS_URL,
        title="fixmem",
        summary="Fix memory for coding agents: recall past fixes, see stats, forget entries.",
        version="1",
    )
    app.state.ctx = ctx
    app.include_router(router)
    for mount in mounts:
        mount(app, ctx)
    app.add_exception_handler(RequestValidationError, _invalid)
    requests_total = ctx.metrics.requests

    @app.middleware("http")
    async def _count(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        template = getattr(request.scope.get("route"), "path", "other")
        requests_total.labels(request.method, template, str(response.status_code)).inc()
        # The query string is never logged: it holds the caller's task text.
        log.debug(
            "%s %s %d %.1fms",
            request.method, template, response.status_code, (time.perf_counter() - started) * 1000,
        )  # fmt: skip
        return response

    return app


def _check_redis(client: redis.Redis | None) -> str:
    if client is None:
        return "not configured"
    try:
        client.ping()
    except redis.exceptions.RedisError as exc:
        return f"error: {type(exc).__name__}"
    return "ok"


def _check_writable(directory: os.PathLike[str]) -> str:
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".readyz-"):
            pass
    except OSError as exc:
        return f"error: {exc.strerror or type(exc).__name__}"
    return "ok"
