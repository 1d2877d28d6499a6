"""Publish finished turns: to the Redis stream when ``FIXMEM_REDIS_URL`` is set, else into the local store.

``python -m fixmem.hooks.publisher --transcript T --session S --cwd C [--final]`` is what the ``Stop`` /
``SubagentStop`` hook starts detached: it reads the Claude Code transcript with the Claude Code importer
(the same events a backfill of that file gives: same ids, same project key), drops the last turn unless
``--final`` (a subagent stopped; the main turn is still running), skips turns this session published
already, and publishes the rest; the last turn of a ``--final`` publish gets ``harness_meta.commit_end``
and ``dirty`` of ``--cwd``'s checkout at publish time (its ``commit_start`` is not known).
Idempotent twice over: the session remembers what it published, and
the pipeline writes an event id once. Without Redis the turns are extracted and appended here, as the
workers would (``FixMemory``'s in-process path). Failures are logged and counted, never raised to the
agent (``python -m`` exits 0). When Redis does not answer, the turns are kept in the spool
``<data_dir>/hooks/spool/`` (``ingest.spool``; counted as ``spooled``) and count as published: the next
publisher sends them first, and ``--drain`` (started by the ``SessionStart`` and ``UserPromptSubmit`` hooks
when the spool holds turns) sends them alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from fixmem.hooks.arms import recall_record
from fixmem.hooks.claude_code import NO_SESSION, project_of, sessions_dir, spool_dir
from fixmem.hooks.config import HookConfig
from fixmem.hooks.session import SessionState, SessionStore, note_failure
from ingest.schema import TurnEvent


class PublishFailed(Exception):
    """Raised when turns could not be published (Redis refused or is down, the store cannot be written)."""


def publish_events(config: HookConfig, events: Sequence[TurnEvent]) -> list[str]:
    """Publish ``events``: XADD to the stream with Redis (spooled turns first; the events spooled when
    Redis does not answer), else extract and append locally; their ids. Raises PublishFailed."""
    if config.redis_url:
        from ingest.errors import IngestError  # noqa: PLC0415
        from ingest.publish import connect, publish_many  # noqa: PLC0415
        from ingest.spool import Spool  # noqa: PLC0415

        spool = Spool(spool_dir(config))
        if not events and not spool.pending():
            return []
        try:
            client = connect(config.redis_url, timeout=config.timeout_seconds * 10)
            ids = publish_many(client, list(events), stream=config.stream, spool=spool)
        except (IngestError, ValueError, OSError) as exc:
            raise PublishFailed(str(exc)) from exc
        kept = ids.count("")
        if kept:
            note_failure(config.hooks_dir, "spooled", f"{kept} turns kept in {spool.directory}: Redis down")
        return [e.event_id for e in events]
    if not events:
        return []
    from fixmem import service  # noqa: PLC0415
    from fixmem.hooks.stores import local_store  # noqa: PLC0415
    from store.errors import StoreError  # noqa: PLC0415

    try:
        service.record(local_store(config), events)
    except (StoreError, OSError) as exc:
        raise PublishFailed(f"local store at {config.data_dir}: {exc}") from exc
    return [e.event_id for e in events]


def with_recall(event: TurnEvent, state: SessionState) -> TurnEvent:
    """``event`` carrying the session's impact record (``harness_meta.recall``; not part of its id)."""
    from pydantic import ValidationError  # noqa: PLC0415

    from ingest.recall_meta import RecallMeta  # noqa: PLC0415

    record = recall_record(state)
    try:
        recall = None if record is None else RecallMeta.model_validate(record)
    except ValidationError:  # a hand-edited state file: the turn goes without its record
        return event
    if recall is None:
        return event
    meta = event.harness_meta.model_copy(update={"recall": recall})
    return event.model_copy(update={"harness_meta": meta})


def transcript_events(config: HookConfig, transcript: Path, cwd: str) -> list[TurnEvent]:
    """The turn events of a Claude Code transcript (the readable ones when some lines are torn)."""
    from ingest.importers import PartialLog  # noqa: PLC0415
    from ingest.importers.claude_code import parse  # noqa: PLC0415

    data = transcript.read_bytes()
    project = project_of(config, cwd) if config.project or cwd else None
    try:
        return parse(data, source=str(transcript), owner=config.owner, project=project)
    except PartialLog as exc:  # a line being written as we read: the complete turns are good
        return exc.events


def with_place(event: TurnEvent, cwd: str) -> TurnEvent:
    """``event`` with ``harness_meta.commit_end`` and ``dirty`` of ``cwd``'s checkout now (``git rev-parse
    HEAD``, ``git status --porcelain``): the best known of the last turn at publish time. Not part of its
    id, so a later publish of the same turn is still the same turn."""
    from ingest.git_place import place  # noqa: PLC0415

    found = {k: v for k, v in place(cwd).items() if getattr(event.harness_meta, k) is None}
    if not found:
        return event
    return event.model_copy(update={"harness_meta": event.harness_meta.model_copy(update=found)})


def publish_transcript(
    config: HookConfig, transcript: Path, session_id: str, cwd: str, *, final: bool
) -> list[str]:
    """Publish the finished turns of ``transcript`` not published yet by this session; their ids."""
    events = transcript_events(config, transcript, cwd)
    if not final:
        events = events[:-1]
    elif events and cwd:  # the turn that just ended: where its checkout is now (its start is not known)
        events[-1] = with_place(events[-1], cwd)
    sessions = SessionStore(sessions_dir(config))
    with sessions.update(session_id or NO_SESSION) as box:
        done = set(box[0].published)
        todo = [with_recall(e, box[0]) for e in events if e.event_id not in done]
        published = publish_events(config, todo)
        box[0] = box[0].replace(published=(*box[0].published, *published))
    return published


def main(argv: list[str] | None = None) -> int:
    """The detached publisher's entry point; always 0 (failures go to the hook log)."""
    parser = argparse.ArgumentParser(prog="python -m fixmem.hooks.publisher")
    parser.add_argument("--transcript", default="")
    parser.add_argument("--drain", action="store_true", help="only send the spooled turns")
    parser.add_argument("--session", default="")
    parser.add_argument("--cwd", default="")
    parser.add_argument("--final", action="store_true")
    args = parser.parse_args(argv)
    config = HookConfig.from_env()
    try:
        if args.drain or not args.transcript:
            publish_events(config, [])
        else:
            publish_transcript(config, Path(args.transcript), args.session, args.cwd, final=args.final)
    except Exception as exc:
        note_failure(config.hooks_dir, "publish", f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
