"""Recall for the hooks: through the HTTP API (stdlib ``urllib``) or from the local store, same answers.

Both return the ranked candidates, best first: the lines of the "Past fixes in this project" block the
store renders, each with the id and files of the entry it shows (the block has one line per entry, in
rank order). The remote reader needs ``FIXMEM_API_URL`` and
``FIXMEM_API_TOKEN`` (the token decides the owner); the local one imports the store (numpy) on first use.
Errors are ``ReaderError`` (the hook logs and counts them, and answers nothing).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from fixmem.hooks.config import HookConfig

MAX_QUERY_CHARS = 4000  # fixmem.tool.MAX_QUERY_CHARS, the API's limit on q


class ReaderError(Exception):
    """Raised when recall fails: the API or the store cannot be reached or answers nonsense."""


@dataclass(frozen=True)
class Query:
    """What to recall for: the task text, files, an error. ``q`` is what the API requires."""

    q: str
    files: tuple[str, ...] = field(default=())
    error: str | None = None

    def text(self) -> str:
        return (self.q.strip() or self.error or " ".join(self.files) or "")[:MAX_QUERY_CHARS]


@dataclass(frozen=True)
class Candidate:
    """One recalled entry: its id, its files, and its line of the prompt block."""

    entry_id: str
    files: tuple[str, ...]
    line: str


class Reader(Protocol):
    def candidates(self, project: str, query: Query) -> list[Candidate]:
        """Ranked candidates for ``query`` in ``project``; raises ReaderError."""
        ...


def pair(entries: list[tuple[str, tuple[str, ...]]], block: str) -> list[Candidate]:
    """Pair the block's entry lines (``- [outcome] …``; its header and section headings such as "Possibly
    related:" are not entries) with the (id, files) of the entries, in order."""
    lines = [line for line in block.splitlines()[1:] if line.startswith("- ")]
    return [Candidate(i, files, line) for (i, files), line in zip(entries, lines, strict=False)]


class RemoteReader:
    """Recall through ``GET /api/fix-memory`` of a running ``fixmem serve``/``fixmem up``."""

    def __init__(self, url: str, token: str, *, timeout: float, k: int, budget_tokens: int) -> None:
        self.url, self.token, self.timeout, self.k = url.rstrip("/"), token, timeout, k
        self.budget_tokens = budget_tokens

    def candidates(self, project: str, query: Query) -> list[Candidate]:
        from urllib.parse import urlencode  # noqa: PLC0415

        from fixmem.hooks.http import get  # noqa: PLC0415

        text = query.text()
        if not text:
            return []
        params: list[tuple[str, str]] = [("project_id", project), ("q", text), ("k", str(self.k))]
        params += [("files", f) for f in query.files]
        if query.error:
            params.append(("error", query.error[:MAX_QUERY_CHARS]))
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        try:
            status, raw = get(f"{self.url}/api/fix-memory?{urlencode(params)}", headers, self.timeout)
        except (OSError, ValueError) as exc:
            raise ReaderError(f"API unreachable at {self.url}: {exc}") from exc
        if status == 404:  # the project has no entries yet
            return []
        if status != 200:
            raise ReaderError(f"API answered {status} for recall")
        try:
            body = json.loads(raw)
            found = [
                (str(item["entry"]["id"]), tuple(str(f) for f in item["entry"].get("files") or ()))
                for item in body["recalled"]
            ]
            return pair(found, str(body["prompt_block"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReaderError(f"unexpected API answer: {exc!r}") from exc


class LocalReader:
    """Recall from the store under the data directory (imports the store on first use)."""

    def __init__(self, config: HookConfig) -> None:
        self.config = config
        self._store: Any = None  # one FixStore: its parsed-log cache makes later recalls warm

    def candidates(self, project: str, query: Query) -> list[Candidate]:
        from store import FixStore, prompt_block  # noqa: PLC0415 - the slow imports, only when needed
        from store.errors import StoreError  # noqa: PLC0415

        text = query.text()
        if not text or not self.config.owner:
            return []
        now = time.time()
        try:
            if self._store is None:
                self._store = FixStore(self.config.data_dir, cap=self.config.rotation_cap)
            recalled = self._store.recall(
                self.config.owner,
                project,
                text,
                files=list(query.files),
                errors=[query.error] if query.error else [],
                k=self.config.k,
                now=now,
            )
        except (StoreError, ValueError, OSError) as exc:
            raise ReaderError(f"local store at {self.config.data_dir}: {exc}") from exc
        block = prompt_block(recalled, self.config.prompt_budget_tokens, now=now)
        return pair([(r.entry.id, tuple(r.entry.files)) for r in recalled], block)


def reader_for(config: HookConfig) -> Reader:
    """The remote reader when the API URL and token are set, else the local one."""
    if config.remote and config.api_url and config.api_token:
        return RemoteReader(
            config.api_url,
            config.api_token,
            timeout=config.timeout_seconds,
            k=config.k,
            budget_tokens=config.prompt_budget_tokens,
        )
    return LocalReader(config)
