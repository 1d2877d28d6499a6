"""Who is looking at the web UI: the session cookie, the bearer token, and CSRF tokens.

A login (``POST /ui/login`` with a field ``token``) checks the token like the API does (``TokenMap``) and
starts a server-side session: a random 256-bit id in an ``HttpOnly; SameSite=Strict`` cookie, mapped in
memory to the owner, the operator name (``FIXMEM_API_OPS_TOKENS``) and a CSRF token. The token itself is
never stored nor put in a cookie; sessions end at logout, after ``SESSION_SECONDS``, or when the server
restarts (then one logs in again). Every form of a session carries its CSRF token, compared in constant
time; scripts may send ``Authorization: Bearer <token>`` instead, and need no CSRF token (no ambient
credential is involved then). The login form itself is protected by a double-submit cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

SESSION_COOKIE: Final = "fixmem_session"
LOGIN_COOKIE: Final = "fixmem_login"
SESSION_SECONDS: Final = 12 * 3600.0
MAX_SESSIONS: Final = 10_000  # the oldest go first past this


@dataclass(frozen=True)
class Viewer:
    """Who a request is from: an owner (their fix memory), an operator (the pipeline page), or both.

    ``csrf``: the token forms must carry (None for bearer requests, which need none).
    """

    owner: str | None
    operator: str | None
    csrf: str | None
    via_cookie: bool

    @property
    def is_ops(self) -> bool:
        """Whether this viewer may see the pipeline page."""
        return self.operator is not None


def csrf_matches(expected: str | None, given: str | None) -> bool:
    """Whether a form's CSRF token is the session's (constant time); False when either is missing."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def _key(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class _Session:
    owner: str | None
    operator: str | None
    csrf: str
    expires: float


class Sessions:
    """The live sessions of this process, by the SHA-256 of their id (bounded, oldest evicted first)."""

    def __init__(
        self,
        *,
        ttl: float = SESSION_SECONDS,
        limit: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._ttl = ttl
        self._limit = limit
        self._clock = clock
        self._items: OrderedDict[bytes, _Session] = OrderedDict()
        self._mutex = threading.Lock()

    def start(self, owner: str | None, operator: str | None) -> str:
        """A new session for ``owner`` / ``operator``; its id (for the cookie)."""
        session_id = secrets.token_urlsafe(32)
        session = _Session(owner, operator, secrets.token_urlsafe(32), self._clock() + self._ttl)
        with self._mutex:
            self._items[_key(session_id)] = session
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
        return session_id

    def viewer(self, session_id: str | None) -> Viewer | None:
        """The viewer of a live session, or None (no id, unknown, or expired)."""
        if not session_id or len(session_id) > 128:
            return None
        key = _key(session_id)
        with self._mutex:
            session = self._items.get(key)
            if session is not None and session.expires <= self._clock():
                del self._items[key]
                session = None
        if session is None:
            return None
        return Viewer(session.owner, session.operator, session.csrf, via_cookie=True)

    def end(self, session_id: str | None) -> None:
        """Forget a session (logout); nothing happens for an unknown id."""
        if session_id:
            with self._mutex:
                self._items.pop(_key(session_id), None)

    def __len__(self) -> int:
        return len(self._items)
