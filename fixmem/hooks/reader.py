"""Recall for the hooks: through the HTTP API, the local recall daemon, or the store in-process.

All three return the same ranked candidates, best first: the lines of the "Past fixes in this project"
block the store renders, each with the id and files of the entry it shows (the block has one line per
entry, in rank order). ``RemoteReader`` needs ``FIXMEM_API_URL`` and ``FIXMEM_API_TOKEN`` (the token
decides the owner) and is a stdlib client (``fixmem.hooks.http``). ``DaemonReader`` asks the warm
``python -m fixmem.hooks.daemon`` of the data directory over its unix socket, starting it when none
answers; the daemon runs ``LocalReader``, which imports the store (numpy, pydantic: ~0.5 s) on first
use — in-process only in a long-lived caller (the harness adapter, the daemon itself).
Errors are ``ReaderError`` (the hook logs and counts them, and answers nothing).
"""

from __future__ import annotations

import json
import os
import time

from fixmem.hooks.config import HookConfig

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # (checkout, task text) -> (file, weight, why)s, None while the checkout's index is cold
    Localizer = Callable[[str, str], list[tuple[str, float, str]] | None]

# Mirrors of fixmem.limits (checked by a test): what the API accepts, so that every mode asks the same.
MAX_QUERY_CHARS = 16_384
MAX_PATH_CHARS = 1024
MAX_REASON_CHARS = 300
MAX_FILES = 50
SAME_ERROR = "same error"  # store.recall.search: the reason of a fix matched on the query's error signature


class ReaderError(Exception):
    """Raised when recall fails: the API, the daemon or the store cannot be reached or answers nonsense."""


class ColdStart(ReaderError):
    """Raised when the recall daemon is starting and the hook does not wait for it."""


class Query:
    """What to recall for: the task text, files, an error. ``q`` is what the API requires. ``weights``:
    the task was localized (workspace mode): how sure each file is, in (0, 1] (1: known; under 1: a file
    the task was localized to); None: not localized, every file known. ``reasons``: why each file was
    chosen ("" for a known file; None: nothing said). ``checkout``: the directory the task runs in, where
    a task-start recall localizes it (never sent to the API: a remote reader localizes on this side and
    sends the files with their weights and reasons)."""

    __slots__ = ("checkout", "error", "files", "q", "reasons", "weights")

    def __init__(
        self,
        q: str,
        files: tuple[str, ...] = (),
        error: str | None = None,
        *,
        weights: tuple[float, ...] | None = None,
        checkout: str | None = None,
        reasons: tuple[str, ...] | None = None,
    ) -> None:
        self.q, self.files, self.error = q, files, error
        self.weights, self.checkout, self.reasons = weights, checkout, reasons

    def replace(self, *, q: str | None = None, files: tuple[str, ...] | None = None) -> Query:
        """A copy with another text or files (files replaced: their weights dropped)."""
        text = self.q if q is None else q
        if files is None:
            return Query(
                text,
                self.files,
                self.error,
                weights=self.weights,
                checkout=self.checkout,
                reasons=self.reasons,
            )
        return Query(text, files, self.error, checkout=self.checkout)

    def with_guesses(self, guesses: list[tuple[str, float, str]]) -> Query:
        """The query of a task localized to the (file, weight, why) ``guesses`` (maybe none): they are
        added after the files not among them, which weigh 1."""
        weights = self.weights or (1.0,) * len(self.files)
        known = {
            f: (w, r)
            for f, w, r in zip(self.files, weights, self.reasons or [""] * len(weights), strict=True)
        }
        added = [(f, w, r) for f, w, r in guesses if f not in known]
        files = (*known, *(f for f, _, _ in added))
        weighed = (*(w for w, _ in known.values()), *(w for _, w, _ in added))
        reasons = (*(r for _, r in known.values()), *(r for _, _, r in added))
        return Query(self.q, files, self.error, weights=weighed, checkout=self.checkout, reasons=reasons)

    def __eq__(self, other: object) -> bool:
        mine, theirs = (self.to_json(), self.checkout), None
        if isinstance(other, Query):
            theirs = (other.to_json(), other.checkout)
        return mine == theirs

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        more = (
            (f", weights={self.weights!r}" if self.weights is not None else "")
            + (f", checkout={self.checkout!r}" if self.checkout else "")
            + (f", reasons={self.reasons!r}" if self.reasons is not None else "")
        )
        return f"Query({self.q!r}, files={self.files!r}, error={self.error!r}{more})"

    def text(self) -> str:
        """The text recalled for, fitted to the API's bound as the CLI and the MCP tool fit it."""
        text = self.q.strip() or self.error or " ".join(self.files) or ""
        if len(text) <= MAX_QUERY_CHARS:
            return text
        from store.recall.code import fit_query  # noqa: PLC0415 - numpy: only for a text this long

        return fit_query(text, MAX_QUERY_CHARS)

    def to_json(self) -> dict[str, Any]:
        """The request body of ``POST /api/fix-memory`` (and of the daemon) without the project."""
        weights = self.weights or (1.0,) * len(self.files)
        reasons = self.reasons or ("",) * len(self.files)
        kept = [
            (f, w, r)
            for f, w, r in zip(self.files, weights, reasons, strict=True)
            if 0 < len(f) <= MAX_PATH_CHARS
        ][:MAX_FILES]
        body: dict[str, Any] = {"q": self.text(), "files": [f for f, _, _ in kept]}
        if self.weights is not None:  # localized (maybe to nothing): the weights say it
            body["weights"] = [w for _, w, _ in kept]
            if any(r for _, _, r in kept):
                body["reasons"] = [_one_line(r) for _, _, r in kept]
        if self.error:
            body["error"] = self.error
        return body


def _one_line(reason: str) -> str:
    """``reason`` as the API takes it: printable, on one line, at most ``MAX_REASON_CHARS``."""
    text = "".join(c if c.isprintable() else " " for c in reason).strip()
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


class Candidate:
    """One recalled entry: its id, its files, its line of the prompt block, and whether the store matched
    it on the query's error signature (``same error``: what a follow of an error is)."""

    __slots__ = ("entry_id", "files", "line", "same_error")

    def __init__(self, entry_id: str, files: tuple[str, ...], line: str, same_error: bool = False) -> None:
        self.entry_id, self.files, self.line, self.same_error = entry_id, files, line, same_error

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Candidate) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Candidate{tuple(self.to_json())!r}"

    def to_json(self) -> list[Any]:
        return [self.entry_id, list(self.files), self.line, self.same_error]

    @classmethod
    def from_json(cls, item: Any) -> Candidate:
        """Raises TypeError, ValueError on a malformed item (an older daemon's has no fourth element)."""
        entry_id, files, line, *rest = item
        if not isinstance(entry_id, str) or not isinstance(line, str) or not isinstance(files, list):
            raise TypeError(f"not a candidate: {item!r}")
        return cls(entry_id, tuple(str(f) for f in files), line, bool(rest and rest[0] is True))


class Reader:
    """Recall for the hooks (the readers below)."""

    def candidates(self, project: str, query: Query) -> list[Candidate]:
        """Ranked candidates for ``query`` in ``project``; raises ReaderError."""
        raise NotImplementedError


def pair(entries: list[tuple[str, tuple[str, ...], bool]], block: str) -> list[Candidate]:
    """Pair the block's entries with the (id, files, same error) of the entries, in order. An entry is its
    ``- [outcome] …`` line and the lines under it (its ``change:`` lines); a section heading ("Possibly
    related:") is not an entry: it goes before each entry of its section (``session.choose`` shows it
    once), so the block a fresh session gets is the store's."""
    chunks: list[str] = []
    heading = ""
    for line in block.splitlines()[1:]:
        if line.startswith("- "):
            chunks.append(f"{heading}\n{line}" if heading else line)
        elif line.startswith(" ") and chunks:
            chunks[-1] += "\n" + line
        else:
            heading = line
    return [Candidate(i, f, chunk, same) for (i, f, same), chunk in zip(entries, chunks, strict=False)]


class RemoteReader(Reader):
    """Recall through ``POST /api/fix-memory`` of a running ``fixmem serve``/``fixmem up``."""

    def __init__(
        self, url: str, token: str, *, timeout: float, k: int, localizer: Localizer | None = None
    ) -> None:
        self.url, self.token, self.timeout, self.k = url.rstrip("/"), token, timeout, k
        self.localizer = localizer  # the server cannot see the checkout: this side localizes

    def candidates(self, project: str, query: Query) -> list[Candidate]:
        from fixmem.hooks.http import request  # noqa: PLC0415

        guesses = self.localizer(query.checkout, query.q) if query.checkout and self.localizer else None
        if guesses is not None:  # None: the checkout's index is cold (text only)
            query = query.with_guesses(guesses)
        body = query.to_json()
        if not body["q"]:
            return []
        payload = json.dumps({**body, "project_id": project, "k": self.k}).encode()
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        }
        try:
            status, raw = request("POST", f"{self.url}/api/fix-memory", headers, payload, self.timeout)
        except (OSError, ValueError) as exc:
            raise ReaderError(f"API unreachable at {self.url}: {exc}") from exc
        if status == 404:  # the project has no entries yet
            return []
        if status != 200:
            raise ReaderError(f"API answered {status} for recall")
        try:
            answer = json.loads(raw)
            found = [
                (
                    str(item["entry"]["id"]),
                    tuple(str(f) for f in item["entry"].get("files") or ()),
                    (item.get("reasons") or {}).get("error") == SAME_ERROR,
                )
                for item in answer["recalled"]
            ]
            return pair(found, str(answer["prompt_block"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReaderError(f"unexpected API answer: {exc!r}") from exc


class LocalReader(Reader):
    """Recall from the store under the data directory (imports the store on first use, keeps it warm)."""

    def __init__(self, config: HookConfig) -> None:
        self.config = config
        self._store: Any = None  # one FixStore: its parsed-log cache makes later recalls warm
        self._keeper: Any = None  # fixmem.runtime.localize.keeper.Keeper: the checkouts' indexes, kept warm

    def localized(self, checkout: str, text: str) -> tuple[Any, ...] | None:
        """Where ``text`` points in ``checkout`` (``store.localize.Localized``s; () for nowhere), from the
        index this process keeps warm; None while it is cold or localization is off. Never raises: a
        failure is logged and counted (``localize``), and the recall goes on text only."""
        if not self.config.localize or not checkout:
            return None
        from fixmem.hooks.session import note_failure  # noqa: PLC0415

        hooks_dir = self.config.hooks_dir
        try:
            if self._keeper is None:
                from fixmem.runtime.localize.keeper import Keeper  # noqa: PLC0415

                self._keeper = Keeper(
                    os.path.abspath(self.config.localize_dir),
                    on_failure=lambda message: note_failure(hooks_dir, "localize", message),
                )
            found = self._keeper.localized(checkout, text)
        except Exception as exc:  # localization is a bonus: never the reason a recall fails
            note_failure(hooks_dir, "localize", f"{type(exc).__name__}: {exc}")
            return None
        return None if found is None else tuple(found)

    def poll(self) -> None:
        """Reap the index builds that ended (an idle daemon calls it)."""
        if self._keeper is not None:
            self._keeper.poll()

    def candidates(self, project: str, query: Query) -> list[Candidate]:
        return self.recall(self.config.owner, project, query, self.config.k, self.config.prompt_budget_tokens)

    def recall(self, owner: str, project: str, query: Query, k: int, budget_tokens: int) -> list[Candidate]:
        """``candidates`` for any owner, ``k`` and block budget (what the daemon is asked)."""
        _full_site()
        from fixmem import service  # noqa: PLC0415 - the slow imports, only when needed
        from fixmem.hooks.stores import local_store  # noqa: PLC0415
        from store.errors import StoreError  # noqa: PLC0415

        body = query.to_json()
        if not body["q"] or not owner:
            return []
        now = time.time()
        try:
            if self._store is None:
                self._store = local_store(self.config)
            errors = [body["error"]] if body.get("error") else []
            localized = self.localized(query.checkout, body["q"]) if query.checkout else None
            weights, reasons = body.get("weights"), body.get("reasons")
            question = service.Question(
                body["q"], body["files"], errors, k, weights=weights, localized=localized, reasons=reasons
            )
            found = service.recall(
                self._store, owner, project, question, budget_tokens=budget_tokens, now=now
            )
        except (StoreError, ValueError, OSError) as exc:
            raise ReaderError(f"local store at {self.config.data_dir}: {exc}") from exc
        found_ids = [
            (r.entry.id, tuple(r.entry.files), r.reasons.error == SAME_ERROR) for r in found.recalled
        ]
        return pair(found_ids, found.block)


def _full_site() -> None:
    """Process ``site`` (site-packages, ``.pth`` files) in a hook started with ``python -S``
    (``fixmem.hooks.__main__``) before it imports the store in-process (the daemon turned off)."""
    import sys  # noqa: PLC0415

    if sys.flags.no_site and "site" not in sys.modules:
        import site  # noqa: PLC0415

        site.main()
