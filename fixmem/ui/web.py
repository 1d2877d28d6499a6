"""The web UI's plumbing: templates, who the viewer is, forms with CSRF, errors as pages, login.

Every response of ``/ui`` carries a strict Content-Security-Policy (no script at all, styles and images
from this server only), ``nosniff``, no framing, no referrer to other sites and ``no-store``. Templates
are Jinja2 with autoescaping on for every template: everything an agent's log put in an entry is text.
A POST is refused when its ``Origin`` (or ``Sec-Fetch-Site``) says another site sent it, and, for a
session, when its form lacks the session's CSRF token.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Annotated, Any, Final
from urllib.parse import parse_qs, urlencode, urlsplit

import jinja2
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from fixmem.api.auth import Tokens, load_ops_tokens
from fixmem.api.context import ApiContext, store_errors
from fixmem.ui.limit import LoginLimiter
from fixmem.ui.session import LOGIN_COOKIE, SESSION_COOKIE, Sessions, Viewer, csrf_matches
from fixmem.ui.summary import ProjectRows
from store.notes import NotesError

log = logging.getLogger("fixmem.ui")

PREFIX: Final = "/ui"
MAX_FORM_BYTES: Final = 256 << 10
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no referrer leaves the site; posts keep their Origin
    "Cache-Control": "no-store",
}
_LOCAL_PATH = re.compile(r"^/ui(/[A-Za-z0-9/_.-]*)?$")


class UiError(Exception):
    """Raised by a page that cannot be shown: an HTTP status and one sentence for the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class LoginNeeded(Exception):
    """Raised when a page is asked for without a session or a bearer token."""


@dataclass(frozen=True)
class UiState:
    """What the pages share: the templates, the sessions, the operators' tokens, the static files, the
    projects page's rows and the failed-login counts."""

    templates: jinja2.Environment
    sessions: Sessions
    ops_tokens: Tokens
    static: Mapping[str, bytes]
    project_rows: ProjectRows
    logins: LoginLimiter


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _link(path: str, **params: Any) -> str:
    """``path`` with the non-empty ``params`` as a query string (lists repeat the name)."""
    pairs = [
        (k, str(item))
        for k, v in params.items()
        for item in (v if isinstance(v, list | tuple) else [v])
        if item not in (None, "")
    ]
    return path + ("?" + urlencode(pairs) if pairs else "")


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def build_state(ctx: ApiContext) -> UiState:
    """The UI's state for ``ctx``; raises TokenConfigError for malformed operators' tokens."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("fixmem.ui", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["short"] = _short
    env.globals["link"] = _link
    static = {
        f.name: f.read_bytes()
        for f in resources.files("fixmem.ui").joinpath("static").iterdir()
        if f.is_file()
    }
    settings = ctx.settings
    logins = LoginLimiter(settings.ui_login_max_failures, settings.ui_login_window_seconds)
    return UiState(env, Sessions(), load_ops_tokens(settings), static, ProjectRows(), logins)


def context(request: Request) -> ApiContext:
    """The API context the UI serves."""
    ctx: ApiContext = request.app.state.ctx
    return ctx


def state(request: Request) -> UiState:
    """The UI's own state."""
    ui: UiState = request.app.state.ui
    return ui


def viewer(request: Request) -> Viewer:
    """The viewer: a bearer token (API or operator's) else the session cookie; LoginNeeded without either,
    UiError 401 for an unknown bearer token."""
    ui = state(request)
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            owner = context(request).tokens.owner(token)
            operator = ui.ops_tokens.owner(token)
            if owner is not None or operator is not None:
                return Viewer(owner, operator, None, via_cookie=False)
        raise UiError(401, "missing or unknown bearer token")
    found = ui.sessions.viewer(request.cookies.get(SESSION_COOKIE))
    if found is None:
        raise LoginNeeded
    return found


Who = Annotated[Viewer, Depends(viewer)]
Ctx = Annotated[ApiContext, Depends(context)]


def owner_of(who: Viewer) -> str:
    """The owner whose memory the viewer sees; UiError 403 for an operator's token that owns none."""
    if who.owner is None:
        raise UiError(403, "this is an operator's token: it owns no fix memory (see the Pipeline page)")
    return who.owner


class Form:
    """A parsed ``application/x-www-form-urlencoded`` body."""

    def __init__(self, values: dict[str, list[str]]) -> None:
        self._values = values

    def get(self, name: str, default: str = "") -> str:
        """The first value of ``name``."""
        found = self._values.get(name)
        return found[0] if found else default

    def getlist(self, name: str) -> list[str]:
        """Every value of ``name``, in order."""
        return list(self._values.get(name, []))


def _same_origin(request: Request) -> bool:
    """Whether a post comes from this site: ``Sec-Fetch-Site`` and ``Origin`` when the client sends them
    (browsers do; a script may send neither, and then the CSRF token alone guards a session)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:  # set by the browser itself: no page can forge it
        return site in {"same-origin", "none"}
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme in {"http", "https"} and parts.netloc == request.headers.get("host", "")


async def read_form(request: Request) -> Form:
    """The request's form; UiError 403 for a cross-site post, 413 for a body too large, 415 for another
    content type."""
    if not _same_origin(request):
        raise UiError(403, "this form was posted from another site")
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise UiError(415, "post the form as application/x-www-form-urlencoded")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise UiError(413, f"the form is larger than {MAX_FORM_BYTES // 1024} KiB")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UiError(400, "the form is not UTF-8") from exc
    return Form(parse_qs(text, keep_blank_values=True, max_num_fields=10_000))


async def checked_form(request: Request, who: Who) -> Form:
    """The form of a state-changing post: a session's must carry its CSRF token (bearer posts need none)."""
    form = await read_form(request)
    if who.via_cookie and not csrf_matches(who.csrf, form.get("csrf")):
        raise UiError(403, "the form's CSRF token is missing or stale: reload the page and try again")
    return form


Posted = Annotated[Form, Depends(checked_form)]


@contextlib.contextmanager
def failures() -> Iterator[None]:
    """Store, notes and Redis failures as error pages (the API's mapping; the details go to the log)."""
    try:
        with store_errors():
            yield
    except HTTPException as exc:
        raise UiError(exc.status_code, str(exc.detail)) from exc
    except NotesError as exc:
        log.error("ui request failed: %r", exc)
        raise UiError(503, f"the project notes cannot be read or written: {exc}") from exc


def render(
    request: Request, who: Viewer | None, name: str, *, status: int = 200, **values: Any
) -> HTMLResponse:
    """Template ``name`` as a page for ``who``, with the security headers."""
    template = state(request).templates.get_template(name)
    body = template.render(who=who, csrf=who.csrf if who else None, path=request.url.path, **values)
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


def redirect(url: str) -> RedirectResponse:
    """A 303 to ``url`` (after a post: the browser gets it)."""
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)


def local_next(value: str | None) -> str:
    """``value`` when it is a page of this UI (no open redirect), else the projects page."""
    if value and _LOCAL_PATH.match(value.split("?", 1)[0]) and "//" not in value:
        return value
    return f"{PREFIX}/projects"


# -- login, logout, static files, errors ---------------------------------------------------------------

router = APIRouter(include_in_schema=False)


@router.get(PREFIX)
def home() -> RedirectResponse:
    """The projects page."""
    return redirect(f"{PREFIX}/projects")


@router.get(f"{PREFIX}/login")
def login_page(request: Request, next: str = "") -> HTMLResponse:
    """The login form (a double-submit cookie guards it)."""
    return _login_form(request, next, status=200)


def _login_form(
    request: Request,
    next_url: str,
    *,
    status: int,
    error: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    nonce = secrets.token_urlsafe(24)
    response = render(
        request, None, "login.html", status=status, nonce=nonce, next=local_next(next_url), error=error
    )
    response.headers.update(headers or {})
    response.set_cookie(
        LOGIN_COOKIE, nonce, httponly=True, samesite="strict", path=PREFIX, secure=_https(request)
    )
    return response


def _https(request: Request) -> bool:
    return request.url.scheme == "https"


def _client(request: Request) -> str:
    """The address the connection comes from (not a forwarded-for header: a client can write one)."""
    return request.client.host if request.client else "unknown"


@router.post(f"{PREFIX}/login")
async def login(request: Request) -> Response:
    """Check the token, start a session and go on to ``next``; the form again (401) for a wrong token,
    and 429 with ``Retry-After`` once the client's failed logins reach the limit (``fixmem.ui.limit``)."""
    form = await read_form(request)
    next_url = local_next(form.get("next"))
    logins, client = state(request).logins, _client(request)
    wait = logins.retry_after(client)
    if wait is not None:
        message = f"too many failed logins from your address: try again in {wait} s"
        return _login_form(request, next_url, status=429, error=message, headers={"Retry-After": str(wait)})
    if not csrf_matches(request.cookies.get(LOGIN_COOKIE), form.get("nonce")):
        return _login_form(request, next_url, status=403, error="the login form expired: try again")
    token = form.get("token").strip()
    owner = context(request).tokens.owner(token)
    operator = state(request).ops_tokens.owner(token)
    if owner is None and operator is None:
        logins.failed(client)
        if (wait := logins.retry_after(client)) is not None:
            log.warning("ui login: %s failed %d times; refused for %d s", client, logins.max_failures, wait)
        return _login_form(request, next_url, status=401, error="unknown token")
    logins.succeeded(client)
    session_id = state(request).sessions.start(owner, operator)
    if owner is None and next_url == f"{PREFIX}/projects":
        next_url = f"{PREFIX}/pipeline"
    response = redirect(next_url)
    response.set_cookie(
        SESSION_COOKIE, session_id, httponly=True, samesite="strict", path=PREFIX, secure=_https(request)
    )
    response.delete_cookie(LOGIN_COOKIE, path=PREFIX)
    log.info("ui login: owner %s, operator %s", owner, operator)
    return response


@router.post(f"{PREFIX}/logout")
async def logout(request: Request, form: Posted) -> Response:
    """End the session."""
    state(request).sessions.end(request.cookies.get(SESSION_COOKIE))
    response = redirect(f"{PREFIX}/login")
    response.delete_cookie(SESSION_COOKIE, path=PREFIX)
    return response


@router.get(PREFIX + "/static/{name}")
def static(request: Request, name: str) -> Response:
    """A file shipped in ``fixmem/ui/static`` (no CDN: the UI works offline)."""
    data = state(request).static.get(name)
    if data is None:
        raise UiError(404, "no such file")
    media = "text/css" if name.endswith(".css") else "image/svg+xml" if name.endswith(".svg") else None
    if media is None:
        raise UiError(404, "no such file")
    headers = {**SECURITY_HEADERS, "Cache-Control": "public, max-age=3600"}
    return Response(data, media_type=media, headers=headers)


async def ui_error(request: Request, exc: Exception) -> Response:
    """A UiError as a page (the viewer is shown the nav when there is a session)."""
    assert isinstance(exc, UiError)
    who = None
    with contextlib.suppress(UiError, LoginNeeded):
        who = viewer(request)
    return render(request, who, "error.html", status=exc.status, message=exc.message)


async def login_needed(request: Request, exc: Exception) -> Response:
    """No session: to the login form, coming back here afterwards (a GET) or to the projects page."""
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    back = target if request.method == "GET" else ""
    return redirect(_link(f"{PREFIX}/login", next=local_next(back) if back else ""))


async def server_timing(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """``Server-Timing: app;dur=<ms>`` on the UI's responses: the server's time for the page (bench/ui.py)."""
    if not request.url.path.startswith(PREFIX):
        return await call_next(request)
    started = time.perf_counter()
    response = await call_next(request)
    response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
    return response
