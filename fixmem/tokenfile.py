"""The ``token:owner`` format of API tokens: ``FIXMEM_API_TOKENS`` (comma-separated), a tokens file (one
a line, blank lines and ``#`` comments ignored). Pure parsing, shared by the API (``fixmem.api.auth``) and
the tokens ``fixmem up`` keeps (``fixmem.runtime.tokens``). Errors name the source and the entry's
position, never the token.
"""

from __future__ import annotations

from typing import Final

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
