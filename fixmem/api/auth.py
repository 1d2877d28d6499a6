"""Bearer tokens mapped to owners: parsing the configuration, and a constant-time lookup.

Configuration (``Settings``): ``FIXMEM_API_TOKENS="token1:alice,token2:bob"`` and/or a file named by
``FIXMEM_API_TOKENS_FILE`` with one ``token:owner`` a line (blank lines and ``#`` comments ignored). A
token is everything before the first ``:`` (no whitespace, no ``:``); the owner is the rest. Errors name
the source and the entry's position, never the token.

A tokens file is watched: ``load_tokens`` (and ``load_ops_tokens``, for ``FIXMEM_API_OPS_TOKENS`` and
``FIXMEM_API_OPS_TOKENS_FILE``) return a ``WatchedTokens`` that re-reads the file when its inode, size or
mtime changes (one ``stat`` per lookup), so ``fixmem token new|revoke`` reach a running API. A file that
turns malformed or unreadable is refused with an error in the log; the tokens read before stay.

``TokenMap.owner`` hashes the presented token and compares it with ``hmac.compare_digest`` against every
configured digest, without stopping at a match, so the time taken says nothing about which token (or
how much of one) matched.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from pydantic import SecretStr

from fixmem.settings import Settings
from fixmem.tokenfile import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, TokenConfigError, parse_tokens

__all__ = [
    "MIN_TOKEN_CHARS",
    "TokenConfigError",
    "TokenMap",
    "Tokens",
    "WatchedTokens",
    "load_ops_tokens",
    "load_tokens",
    "parse_tokens",
]

log = logging.getLogger("fixmem.api.auth")


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenMap:
    """Which owner a bearer token stands for."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._entries = [(_digest(token), owner) for token, owner in tokens.items()]
        self.owners = frozenset(tokens.values())

    def __len__(self) -> int:
        return len(self._entries)

    def owner(self, presented: str | None) -> str | None:
        """The owner of ``presented``, or None; compares against every token in constant time."""
        if not presented or len(presented) > MAX_TOKEN_CHARS:
            return None
        digest = _digest(presented)
        found: str | None = None
        for expected, owner in self._entries:
            if hmac.compare_digest(digest, expected):
                found = owner
        return found


class Tokens(Protocol):
    """What the API and the UI ask of their tokens: a ``TokenMap`` or a ``WatchedTokens``."""

    @property
    def owners(self) -> frozenset[str]: ...

    def __len__(self) -> int: ...

    def owner(self, presented: str | None) -> str | None: ...


class WatchedTokens:
    """A ``TokenMap`` rebuilt by ``build`` whenever ``path`` changes (inode, size, mtime)."""

    def __init__(self, build: Callable[[], TokenMap], path: Path) -> None:
        self._build, self._path = build, path
        self._seen = self._stamp()
        self._map = build()  # raises TokenConfigError: a malformed file at start-up is an error

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self._path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def current(self) -> TokenMap:
        """The tokens as the file holds them now (the previous ones when it cannot be read or parsed)."""
        stamp = self._stamp()
        if stamp != self._seen:
            self._seen = stamp
            try:
                self._map = self._build()
                log.info("tokens re-read from %s: %d token(s)", self._path, len(self._map))
            except TokenConfigError as exc:
                log.error("tokens not re-read, the previous ones stay: %s", exc)
        return self._map

    @property
    def owners(self) -> frozenset[str]:
        return self.current().owners

    def __len__(self) -> int:
        return len(self.current())

    def owner(self, presented: str | None) -> str | None:
        """The owner of ``presented`` in the file's current tokens, or None."""
        return self.current().owner(presented)


def _read_tokens(inline: SecretStr | None, file: Path | None, name: str) -> TokenMap:
    tokens: dict[str, str] = {}
    if inline is not None:
        tokens.update(parse_tokens(inline.get_secret_value(), source=name))
    if file is not None:
        path = Path(file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenConfigError(f"{name}_FILE {path}: cannot read it ({exc})") from exc
        for token, owner in parse_tokens(text, source=str(path), separator="\n").items():
            if tokens.get(token, owner) != owner:
                raise TokenConfigError(f"{path}: a token there is given to another owner in {name}")
            tokens[token] = owner
    short = sum(1 for t in tokens if len(t) < MIN_TOKEN_CHARS)
    if short:
        log.warning(
            "%d API token(s) shorter than %d characters: use long random tokens", short, MIN_TOKEN_CHARS
        )
    return TokenMap(tokens)


def _load(inline: SecretStr | None, file: Path | None, name: str) -> Tokens:
    if file is None:
        return _read_tokens(inline, None, name)
    return WatchedTokens(lambda: _read_tokens(inline, file, name), Path(file).expanduser())


def load_tokens(settings: Settings) -> Tokens:
    """The tokens of ``FIXMEM_API_TOKENS`` and ``FIXMEM_API_TOKENS_FILE`` together (the file watched).

    Raises TokenConfigError when either is malformed or the file cannot be read.
    """
    return _load(settings.api_tokens, settings.api_tokens_file, "FIXMEM_API_TOKENS")


def load_ops_tokens(settings: Settings) -> Tokens:
    """The operators' tokens: ``FIXMEM_API_OPS_TOKENS`` and ``FIXMEM_API_OPS_TOKENS_FILE`` (watched).

    Raises TokenConfigError when either is malformed or the file cannot be read.
    """
    return _load(settings.api_ops_tokens, settings.api_ops_tokens_file, "FIXMEM_API_OPS_TOKENS")
