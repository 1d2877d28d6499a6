"""The tokens ``fixmem up`` keeps in its data directory, and ``fixmem token list|new|revoke`` on them.

Two files, ``<data dir>/tokens`` (owners: the API and the UI) and ``<data dir>/ops-tokens`` (operators:
the UI's Pipeline page), each one ``token:name`` a line: the format ``FIXMEM_API_TOKENS_FILE`` reads, so
``up`` hands them to its API as ``FIXMEM_API_TOKENS_FILE`` / ``FIXMEM_API_OPS_TOKENS_FILE`` (which watch
them: a change reaches the running API at its next request). Mode 0600 in a 0700 directory, rewritten
whole (temp file, fsync, ``os.replace``) under an exclusive ``flock`` of ``<data dir>/tokens.lock``, so
``up`` and ``fixmem token`` never lose each other's changes. A token is shown once, when it is minted;
elsewhere by its fingerprint: the first hex digits of its SHA-256.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from fixmem.tokenfile import TokenConfigError, parse_tokens

Kind = Literal["owner", "operator"]
FILES: Final[dict[Kind, str]] = {"owner": "tokens", "operator": "ops-tokens"}
FINGERPRINT_CHARS: Final = 12
MIN_PREFIX_CHARS: Final = 4


class TokenStoreError(RuntimeError):
    """Raised when a tokens file cannot be read, parsed or written, or a revoke matches nothing."""


@dataclass(frozen=True)
class TokenRow:
    """One token as ``fixmem token list`` shows it (never the token itself)."""

    kind: Kind
    name: str
    fingerprint: str


def tokens_path(data_dir: Path, kind: Kind = "owner") -> Path:
    """Where ``up`` keeps the tokens of ``kind`` for ``data_dir``."""
    return data_dir / FILES[kind]


def fingerprint(token: str) -> str:
    """A token's public name: the first hex digits of its SHA-256."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()[:FINGERPRINT_CHARS]


def read_tokens(data_dir: Path, kind: Kind) -> dict[str, str]:
    """``{token: name}`` of the file (empty when there is none); raises TokenStoreError when malformed."""
    path = tokens_path(data_dir, kind)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenStoreError(f"cannot read {path}: {exc}") from exc
    try:
        return parse_tokens(text, source=str(path), separator="\n")
    except TokenConfigError as exc:
        raise TokenStoreError(str(exc)) from exc


def _write(data_dir: Path, kind: Kind, tokens: dict[str, str]) -> None:
    path = tokens_path(data_dir, kind)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    body = f"# fixmem {kind} tokens: token:name, one a line (`fixmem token` edits them)\n"
    body += "".join(f"{token}:{name}\n" for token, name in tokens.items())
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
        dir_fd = os.open(data_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise TokenStoreError(f"cannot write {path}: {exc}") from exc


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(data_dir / "tokens.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise TokenStoreError(f"cannot lock the tokens of {data_dir}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def ensure_tokens(data_dir: Path, kind: Kind, names: Sequence[str]) -> dict[str, str]:
    """``{name: token}`` for each of ``names``: its first token in the file, minted (and saved) when it
    has none. Raises TokenStoreError."""
    with _locked(data_dir):
        tokens = read_tokens(data_dir, kind)
        first: dict[str, str] = {}
        for token, name in tokens.items():
            first.setdefault(name, token)
        missing = [name for name in dict.fromkeys(names) if name not in first]
        for name in missing:
            first[name] = secrets.token_urlsafe(24)
            tokens[first[name]] = name
        if missing or not tokens_path(data_dir, kind).exists():
            _write(data_dir, kind, tokens)
    return {name: first[name] for name in names}


def new_token(data_dir: Path, kind: Kind, name: str) -> str:
    """Mint another token for ``name`` and save it; returns it. Raises TokenStoreError."""
    with _locked(data_dir):
        tokens = read_tokens(data_dir, kind)
        token = secrets.token_urlsafe(24)
        tokens[token] = name
        _write(data_dir, kind, tokens)
    return token


def list_tokens(data_dir: Path) -> list[TokenRow]:
    """Every token of both files, owners first, by name. Raises TokenStoreError."""
    rows = [
        TokenRow(kind, name, fingerprint(token))
        for kind in FILES
        for token, name in read_tokens(data_dir, kind).items()
    ]
    return sorted(rows, key=lambda row: (row.kind != "owner", row.name, row.fingerprint))


def revoke(
    data_dir: Path, *, prefix: str | None = None, name: str | None = None, kind: Kind | None = None
) -> list[TokenRow]:
    """Remove the one token whose fingerprint starts with ``prefix``, or every token of ``name`` (of
    ``kind`` when given); returns what was removed. Raises TokenStoreError when nothing or, for a prefix,
    more than one token matches, or the prefix is shorter than ``MIN_PREFIX_CHARS``."""
    if prefix is not None and len(prefix) < MIN_PREFIX_CHARS:
        raise TokenStoreError(f"give at least {MIN_PREFIX_CHARS} characters of the fingerprint")
    with _locked(data_dir):
        files = {k: read_tokens(data_dir, k) for k in FILES}
        hits = [
            (k, token)
            for k, tokens in files.items()
            for token, holder in tokens.items()
            if (kind is None or k == kind)
            and (fingerprint(token).startswith(prefix.lower()) if prefix is not None else holder == name)
        ]
        what = f"fingerprint {prefix}" if prefix is not None else f"name {name}"
        if not hits:
            raise TokenStoreError(f"no token with {what} in {data_dir} (see `fixmem token list`)")
        if prefix is not None and len(hits) > 1:
            raise TokenStoreError(f"{len(hits)} tokens have fingerprint {prefix}…: give more of it")
        removed = [TokenRow(k, files[k].pop(token), fingerprint(token)) for k, token in hits]
        for k in {k for k, _ in hits}:
            _write(data_dir, k, files[k])
    return removed
