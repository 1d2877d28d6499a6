"""Our own JSON-lines dump of v1 turn events (one ``TurnEvent`` wire object per line) → the same events.

Each line is checked exactly as the stream consumer checks it (``ingest.schema.parse_event``). Events keep
their own ``owner``, ``event_id`` and ``ts``; ``project`` replaces ``project_key`` when given. Bad lines are
reported with their number and dead-letter reason, and the good ones are still returned (PartialLog).
"""

from __future__ import annotations

from ingest.errors import InvalidEvent
from ingest.importers._common import partial
from ingest.schema import TurnEvent, parse_event

FORMAT = "events"


def parse(data: bytes, *, source: str, owner: str, project: str | None = None) -> list[TurnEvent]:
    """The events of a JSON-lines dump; raises UnreadableLog / PartialLog naming each bad line."""
    del source, owner  # events carry their own identity and owner
    events: list[TurnEvent] = []
    problems: list[str] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = parse_event(line)
        except InvalidEvent as exc:
            problems.append(f"line {number}: {exc}")
            continue
        events.append(event.model_copy(update={"project_key": project}) if project else event)
    return partial(events, problems)
