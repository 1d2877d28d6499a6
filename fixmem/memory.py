"""``FixMemory``: the documented Python API — record a turn, recall past fixes, render the prompt block.

The library face of fixmem for harnesses that call it in-process (no Redis): ``record_from_turn`` runs
the same extraction as the pipeline's workers and appends to the same store. Module-level functions
(``fixmem.record_from_turn``, ``fixmem.recall`` …) use one ``FixMemory`` built lazily from the environment
(``FIXMEM_DATA_DIR`` and the ``FIXMEM_FIX_MEMORY_*`` settings); nothing is read at import time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from fixmem import service, wiring
from fixmem.limits import DEFAULT_K
from fixmem.settings import Settings
from ingest.project_key import project_key_for
from ingest.schema import WIRE_VERSION, derive_event_id, validate_event
from store import FixEntry, FixStore, Recalled


class FixMemory:
    """Past fixes of every project under one data directory."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        settings: Settings | None = None,
        store: FixStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Memory under ``data_dir`` (default: ``settings.data_dir``, i.e. ``$FIXMEM_DATA_DIR``).

        Raises SettingsError when the environment holds a malformed ``FIXMEM_*`` value.
        """
        base = settings or Settings.from_env()
        self.settings = base if data_dir is None else base.with_overrides(data_dir=os.fspath(data_dir))
        self.store = store or wiring.library_store(self.settings)
        self._clock = clock

    def record_from_turn(
        self,
        owner: str,
        *,
        project_key: str = "",
        user_message: str,
        tool_events: Sequence[Mapping[str, Any]],
        harness_meta: Mapping[str, Any] | None = None,
        round_texts: Sequence[str] | None = None,
        workspace: str = "",
        ts: float | None = None,
        event_id: str | None = None,
    ) -> FixEntry | None:
        """Extract the turn's fix entry and append it to the project's log; the entry as written.

        ``project_key`` defaults to ``project_key_for(workspace)`` (the checkout's origin remote as
        ``host/owner/repo``, else the workspace's absolute path) when a workspace is given.
        None (and nothing written) when the memory is off, there is no owner, or no file was touched.
        Recording the same turn twice (same ``event_id``, or the same content) writes it once; a turn
        whose entry was forgotten (``forget``) is not written again, and None is returned.
        Raises InvalidEvent (a ValueError-like error with a reason) for malformed input, StoreError when
        the log cannot be written.
        """
        if not self.settings.fix_memory_enabled or not owner or not owner.strip():
            return None
        if not project_key and workspace.strip():
            project_key = project_key_for(workspace)
        event = validate_event(
            {
                "v": WIRE_VERSION,
                "event_id": event_id or "",
                "ts": self._clock() if ts is None else ts,
                "owner": owner,
                "project_key": project_key,
                "workspace": workspace,
                "user_message": user_message,
                "tool_events": list(tool_events),
                "harness_meta": dict(harness_meta or {}),
                "round_texts": list(round_texts or []),
            }
        )
        if not event_id and ts is None:
            # The turn's identity is its content: the time we happened to record it at is not part of it,
            # so recording the same turn twice (a retry, a re-run hook) writes it once.
            event.event_id = derive_event_id(event.model_copy(update={"ts": 0.0}))
        return service.record(self.store, [event], enabled=self.settings.fix_memory_enabled)[0]

    def recall(
        self,
        owner: str,
        project_key: str,
        query: str,
        *,
        files: Sequence[str] | None = None,
        errors: Sequence[str] | None = None,
        k: int = DEFAULT_K,
        workspace: str | None = None,
        weights: Sequence[float] | None = None,
        reasons: Sequence[str] | None = None,
    ) -> list[Recalled]:
        """The past fixes relevant to ``query``, best first; ``[]`` when nothing is relevant or memory is off.
        ``weights``: how sure each of ``files`` is, in (0, 1] (1: known, under 1: a guess, e.g. where the
        task was localized); None: every file is known. ``reasons``: why each weighed file was guessed (one
        line each, what the recall reasons say of it), with ``weights`` only.

        Raises StoreError when the log cannot be read, InvalidKey for an unusable owner or project key,
        ValueError when ``weights`` does not give each file one weight in (0, 1] or ``reasons`` one line.
        """
        service.check_weights(files or (), weights, reasons)
        if not self.settings.fix_memory_enabled:
            return []
        question = service.Question(query, files or (), errors or (), k, workspace, weights, reasons=reasons)
        return service.find(self.store, owner, project_key, question, now=self._clock())

    def prompt_block(
        self,
        entries: Sequence[Recalled] | Sequence[FixEntry],
        budget_tokens: int | None = None,
        *,
        workspace: str | None = None,
        known_commits: Collection[str] | None = None,
    ) -> str:
        """The "Past fixes in this project:" block for ``entries`` within the budget (default: the setting).

        With a ``workspace``, its hand-written notes (``.fixmem/memory.md``) come first and fixes whose
        files or commit are gone there are marked stale (commits checked with git unless ``known_commits``
        is given). ``""`` when there is nothing to show.
        """
        budget = self.settings.fix_memory_prompt_budget_tokens if budget_tokens is None else budget_tokens
        return service.render(
            entries,
            budget,
            now=self._clock(),
            workspace=workspace,
            notes=True,
            notes_ceiling=self.settings.notes_ceiling,
            known_commits=known_commits,
        )

    def stats(self, owner: str, project_key: str) -> dict[str, Any]:
        """Counts and ratios by outcome, top tags, superseded, malformed, oldest/newest ts, bytes."""
        return self.store.stats(owner, project_key).to_dict()

    def forget(self, owner: str, entry_id: str) -> bool:
        """Delete ``entry_id`` from whichever of ``owner``'s projects holds it; False if none does."""
        return self.store.forget(owner, entry_id)


_default: FixMemory | None = None
_default_lock = threading.Lock()


def default_memory() -> FixMemory:
    """The process-wide ``FixMemory`` built from the environment on first use."""
    global _default  # noqa: PLW0603 - one lazily built instance per process, by design
    with _default_lock:
        if _default is None:
            _default = FixMemory()
        return _default


def record_from_turn(
    owner: str,
    *,
    project_key: str = "",
    user_message: str,
    tool_events: Sequence[Mapping[str, Any]],
    harness_meta: Mapping[str, Any] | None = None,
    round_texts: Sequence[str] | None = None,
    workspace: str = "",
) -> FixEntry | None:
    """``FixMemory.record_from_turn`` on the default memory."""
    return default_memory().record_from_turn(
        owner,
        project_key=project_key,
        user_message=user_message,
        tool_events=tool_events,
        harness_meta=harness_meta,
        round_texts=round_texts,
        workspace=workspace,
    )


def recall(
    owner: str,
    project_key: str,
    query: str,
    *,
    files: Sequence[str] | None = None,
    errors: Sequence[str] | None = None,
    k: int = DEFAULT_K,
    weights: Sequence[float] | None = None,
    reasons: Sequence[str] | None = None,
) -> list[Recalled]:
    """``FixMemory.recall`` on the default memory."""
    return default_memory().recall(
        owner, project_key, query, files=files, errors=errors, k=k, weights=weights, reasons=reasons
    )


def prompt_block(
    entries: Sequence[Recalled] | Sequence[FixEntry],
    budget_tokens: int | None = None,
    *,
    workspace: str | None = None,
    known_commits: Collection[str] | None = None,
) -> str:
    """``FixMemory.prompt_block`` on the default memory."""
    return default_memory().prompt_block(
        entries, budget_tokens, workspace=workspace, known_commits=known_commits
    )


def stats(owner: str, project_key: str) -> dict[str, Any]:
    """``FixMemory.stats`` on the default memory."""
    return default_memory().stats(owner, project_key)


def forget(owner: str, entry_id: str) -> bool:
    """``FixMemory.forget`` on the default memory."""
    return default_memory().forget(owner, entry_id)
