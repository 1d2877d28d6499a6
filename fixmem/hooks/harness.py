"""The Python harness adapter: fixmem in any agent loop, in four calls.

::

    from fixmem.hooks.harness import Harness
    fm = Harness.from_env(workspace="/path/to/checkout")    # FIXMEM_* as the hooks read them
    task = fm.before_task(task) + "\\n\\n" + task               # past fixes for the task ("" for none)
    ...                                                       # in the loop, after each step:
    note = fm.on_file(path) or fm.on_error(output)            # fixes that touched it / hit that error
    fm.after_turn({"user_message": task, "tool_events": [...]})  # publish the finished turn

Local (reads ``FIXMEM_DATA_DIR``) or remote (``FIXMEM_API_URL`` + ``FIXMEM_API_TOKEN``), same answers:
both render the store's "Past fixes in this project" lines (``fixmem.hooks.reader``). Same rules as the
Claude Code hooks, shared code: each fix once per session, a per-session token budget, each file once;
``after_turn`` publishes to Redis when ``FIXMEM_REDIS_URL`` is set, else records into the local store.
Never in the agent's way: when fixmem or Redis is down every call returns "" / None, and the failure is
logged and counted under ``<data_dir>/hooks/``.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from typing import Any

from fixmem.hooks.claude_code import (
    ERROR_TAIL_CHARS,
    Lookup,
    lookup,
    mentioned_files,
    project_of,
    relative,
    sessions_dir,
)
from fixmem.hooks.config import HookConfig
from fixmem.hooks.reader import Query, Reader, ReaderError
from fixmem.hooks.readers import reader_for
from fixmem.hooks.session import SessionStore, note_failure
from ingest.schema import TurnEvent

SURFACE = "harness"  # the surface named in a session's impact record


class Harness:
    """fixmem for one agent session of one workspace."""

    def __init__(
        self,
        config: HookConfig,
        *,
        workspace: str | None = None,
        session: str | None = None,
        reader: Reader | None = None,
    ) -> None:
        self.config = config
        self.workspace = os.path.abspath(workspace or os.getcwd())
        self.session = session or uuid.uuid4().hex
        self.reader = reader or reader_for(config, in_process=True)  # the store stays warm in this process
        self._project: str | None = None
        self._start: str | None = None  # HEAD when the current task started (``before_task``)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, workspace: str | None = None, session: str | None = None
    ) -> Harness:
        """An adapter configured from ``env`` (default ``os.environ``), as the hooks are."""
        return cls(HookConfig.from_env(env), workspace=workspace, session=session)

    @property
    def project(self) -> str:
        """``FIXMEM_PROJECT``, else ``project_key_for(workspace)``."""
        if self._project is None:
            self._project = project_of(self.config, self.workspace)
        return self._project

    def _block(self, action: Lookup) -> str:
        if not self.config.enabled:
            return ""
        try:
            return lookup(self.config, self.reader, self.session, self.project, action, surface=SURFACE)
        except ReaderError as exc:
            note_failure(self.config.hooks_dir, "unavailable", str(exc))
        except Exception as exc:
            note_failure(self.config.hooks_dir, "error", f"{type(exc).__name__}: {exc}")
        return ""

    def before_task(self, text: str) -> str:
        """The block of past fixes relevant to the task ("" for none): put it before the task. Files of
        the workspace the task names weigh in, and the files it localizes to there (its index kept warm
        in this process, built in a child: the first task of a checkout is recalled on its text), as in
        the Claude Code prompt hook."""
        from ingest.git_place import head  # noqa: PLC0415

        self._start = head(self.workspace)
        text = text.strip()
        if not text:
            return ""
        query = Query(text, mentioned_files(text, self.workspace), checkout=self.workspace)
        return self._block(Lookup("UserPromptSubmit", query))

    def on_file(self, path: str, *, edited: bool = False) -> str:
        """Fixes that touched ``path`` not shown yet (once per file per session; "" for none). ``edited``:
        the agent changed the file (a follow of the fixes of that file shown before, for the impact)."""
        rel = relative(os.path.join(self.workspace, path), self.workspace)
        action = Lookup("PostToolUse", Query(rel, files=(rel,)), file=rel, edit=edited)
        return self._block(action) if path.strip() else ""

    def on_error(self, output: str) -> str:
        """Fixes of the error in a failing command's ``output`` not shown yet ("" for none)."""
        error = output.strip()[-ERROR_TAIL_CHARS:]
        return self._block(Lookup("PostToolUseFailure", Query(error, error=error))) if error else ""

    def after_turn(self, turn: TurnEvent | Mapping[str, Any]) -> str | None:
        """Publish the finished turn (a ``TurnEvent``, or a mapping of its fields: ``user_message``,
        ``tool_events``, … — owner, project, workspace, time and id are filled in); its event id (also when
        Redis is down: then it waits in ``<data_dir>/hooks/spool/`` for the next publish), or None when it
        could not be published nor kept (logged and counted)."""
        from fixmem.hooks.publisher import publish_events, with_recall  # noqa: PLC0415 - store or Redis

        try:
            event = turn if isinstance(turn, TurnEvent) else self._event(turn)
            event = with_recall(event, SessionStore(sessions_dir(self.config)).read(self.session))
            published = publish_events(self.config, [event])
        except Exception as exc:
            note_failure(self.config.hooks_dir, "publish", f"{type(exc).__name__}: {exc}")
            return None
        return published[0] if published else None

    def _event(self, turn: Mapping[str, Any]) -> TurnEvent:
        from ingest.git_place import place  # noqa: PLC0415
        from ingest.schema import WIRE_VERSION, derive_event_id, validate_event  # noqa: PLC0415

        given = turn.get("harness_meta")
        meta = dict(given) if given else {"harness": "fixmem.hooks.harness", "session_id": self.session}
        for key, value in {"commit_start": self._start, **place(self.workspace)}.items():
            meta.setdefault(key, value)  # where the turn sits in git: never part of its id
        body = {
            "v": WIRE_VERSION,
            "event_id": "",
            "ts": time.time(),
            "owner": self.config.owner,
            "project_key": self.project,
            "workspace": self.workspace,
            **dict(turn),
            "harness_meta": meta,
        }
        event = validate_event(body)
        if not turn.get("event_id"):  # the turn's identity is its content, not when it was recorded
            event.event_id = derive_event_id(event.model_copy(update={"ts": 0.0}))
        return event
