"""Bearer tokens mapped to owners: parsing the configuration, and a constant-time lookup.

Configuration (``Settings``): ``FIXMEM_API_TOKENS="token1:alice,token2:bob"`` and/or a file named by
``FIXMEM_API_TOKENS_FILE`` with one ``token:owner`` a line (blank lines and ``#`` comments ignored). A
token is everything before the first ``:`` (no whitespace, no ``:``); the owner is the rest. Errors name
the source and the entry's position, never the token.

``TokenMap.owner`` hashes the presented token and compares it with ``hmac.compare_digest`` against every
configured digest, without stopping at a match, so the time taken says nothing about which token (or
how much of one) matched.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from fixmem.settings import Settings

log = logging.getLogger("fixmem.api.auth")

MIN_TOKEN_CHARS: Final = 16  # shorter ones work, with a warning (tests and demos use short ones)
MAX_TOKEN_CHARS: Final = 512
MAX_OWNER_CHARS: Final = 256  # as ingest.schema: an owner no event can carry could never own anything


class TokenConfigError(ValueError):
    """Raised when the token configuration is malformed (the message names where, not the token)."""


def _check_owner(owner: str, where: str) -> str:
    owner = owner.strip()
    if not owner:
        raise TokenConfigError(f"{where}: empty owner")
    if len(owner) > MAX_OWNER_CHARS or owner in {".", ".."} or "/" in owner or "\\" in owner:
        raise TokenConfigError(f"{where}: owner is not a valid owner name (no '/', '\\', '.', '..')")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in owner):
        raise TokenConfigError(f"{where}: owner holds a control character")
    return owner


def parse_tokens(text: str, *, source: str, separator: str = ",") -> dict[str, str]:
    """``token:owner`` entries split by ``separator`` (``"\\n"`` for files) -> ``{token: owner}`` (pure).

    Raises TokenConfigError for an entry without ``:``, an empty or over-long token, a token with
    whitespace, a bad owner, or one token given to two owners.
    """
    tokens: dict[str, str] = {}
    for number, raw in enumerate(text.split(separator), start=1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        where = f"{source} entry {number}"
        token, colon, owner = entry.partition(":")
        token = token.strip()
        if not colon:
            raise TokenConfigError(f"{where}: expected token:owner")
        if not token or len(token) > MAX_TOKEN_CHARS or any(ch.isspace() for ch in token):
            raise TokenConfigError(f"{where}: the token must be 1..{MAX_TOKEN_CHARS} non-space characters")
        owner = _check_owner(owner, where)
        if tokens.get(token, owner) != owner:
            raise TokenConfigError(f"{where}: this token is already given to another owner")
        tokens[token] = owner
    return tokens


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


def load_tokens(settings: Settings) -> TokenMap:
    """The tokens of ``FIXMEM_API_TOKENS`` and ``FIXMEM_API_TOKENS_FILE`` together.

    Raises TokenConfigError when either is malformed or the file cannot be read.
    """
    tokens: dict[str, str] = {}
    if settings.api_tokens is not None:
        tokens.update(parse_tokens(settings.api_tokens.get_secret_value(), source="FIXMEM_API_TOKENS"))
    if settings.api_tokens_file is not None:
        path = Path(settings.api_tokens_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenConfigError(f"FIXMEM_API_TOKENS_FILE {path}: cannot read it ({exc})") from exc
        for token, owner in parse_tokens(text, source=str(path), separator="\n").items():
            if tokens.get(token, owner) != owner:
                raise TokenConfigError(
                    f"{path}: a token there is given to another owner in FIXMEM_API_TOKENS"
                )
            tokens[token] = owner
    short = sum(1 for t in tokens if len(t) < MIN_TOKEN_CHARS)
    if short:
        log.warning(
            "%d API token(s) shorter than %d characters: use long random tokens", short, MIN_TOKEN_CHARS
        )
    return TokenMap(tokens)
