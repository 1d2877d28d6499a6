"""From stream entries to job plans: classify each entry, then cut the valid ones into per-project jobs.

Pure: values in, values out; no Redis, no clock. The consumer does the I/O around it.

Rules this file obeys:

- An entry is either *accepted* (a v1 event with a valid address: kind, owner, project key, workspace;
  kept as the raw bytes it arrived as) or *refused* (a dead-letter reason, a message and the payload, if
  any). Nothing is dropped silently: the worker validates the rest once and dead-letters what fails.
- Accepted events are grouped by (owner, project_key), first-seen order, each group in stream-id order,
  then cut into jobs of at most ``max_events`` events and ``max_bytes`` bytes. Without ``by_project``
  (both routes of ``fixmem ingest``: a steady flow or a backfill brings many projects with a few events
  each) jobs span projects: whole groups are packed into a job while it stays within ``pack_events``
  (a group that does not fit starts a job of its own, cut at ``max_events``), so a job's fixed cost is
  paid per job, not per project, each project is one store append per job, and two workers seldom wait
  for one project's lock.
- A job id is a function of the route tag and the group's stream ids: reading the same entries again
  (after a consumer crash) plans the same job ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.keys import EVENT_FIELD
from ingest.schema import parse_address


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """One entry as read from a stream; ``fields`` is empty when the entry was deleted meanwhile."""

    stream_id: str
    fields: Mapping[bytes, bytes]


@dataclass(frozen=True, slots=True)
class Accepted:
    """A valid event, kept as the raw JSON bytes it arrived as."""

    stream_id: str
    owner: str
    project_key: str
    raw: bytes
    workspace: str = ""


@dataclass(frozen=True, slots=True)
class Refused:
    """An entry that goes to the dead-letter stream, and why."""

    stream_id: str
    reason: DeadLetterReason
    message: str
    payload: bytes | None


@dataclass(frozen=True, slots=True)
class JobPlan:
    """One RQ job to enqueue: its deterministic id and its events, in stream-id order."""

    job_id: str
    events: tuple[Accepted, ...]

    @property
    def size_bytes(self) -> int:
        return sum(len(e.raw) for e in self.events)


def parse_stream_id(stream_id: str) -> tuple[int, int]:
    """``"1700000000000-3"`` -> ``(1700000000000, 3)``; raises ValueError on anything else."""
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


def stream_id_seconds(stream_id: str) -> float:
    """When Redis accepted the entry: the millisecond part of its id, in unix seconds."""
    return parse_stream_id(stream_id)[0] / 1000.0


def successor(stream_id: str) -> str:
    """The smallest stream id greater than ``stream_id`` (for ``XTRIM MINID``)."""
    ms, seq = parse_stream_id(stream_id)
    return f"{ms}-{seq + 1}"


def runs(stream_ids: Sequence[str], place: Mapping[str, tuple[int, int]]) -> list[tuple[str, str, int]]:
    """Cut ``stream_ids`` (in stream order) into runs of entries adjacent in their stream, as
    ``(first id, last id, count)``: ``place`` gives an id's read and its position in that read (the
    entries one ``XREADGROUP`` returns are consecutive in the stream); an id with no place is a run alone.
    One ``XRANGE first last COUNT count`` then reads a run."""
    out: list[tuple[str, str, int]] = []
    previous: tuple[int, int] | None = None
    for stream_id in stream_ids:
        here = place.get(stream_id)
        if out and here is not None and previous is not None and here == (previous[0], previous[1] + 1):
            first, _, count = out[-1]
            out[-1] = (first, stream_id, count + 1)
        else:
            out.append((stream_id, stream_id, 1))
        previous = here
    return out


def classify(entry: StreamEntry, *, max_bytes: int) -> Accepted | Refused:
    """Check what one stream entry's ``event`` field is routed by (``schema.parse_address``).

    Only that: the worker validates the whole event once (``schema.parse_any``) and dead-letters an event
    whose other fields are invalid, with its reason, as the consumer does the ones refused here.
    """
    raw = entry.fields.get(EVENT_FIELD)
    if raw is None:
        present = ", ".join(sorted(k.decode("utf-8", "replace") for k in entry.fields)) or "none"
        return Refused(
            entry.stream_id,
            DeadLetterReason.MISSING_FIELD,
            f"stream entry has no 'event' field (fields: {present})",
            None,
        )
    try:
        address = parse_address(raw, max_bytes=max_bytes)
    except InvalidEvent as exc:
        return Refused(entry.stream_id, exc.reason, exc.message, raw)
    return Accepted(entry.stream_id, address.owner, address.project_key, raw, address.workspace)


def classify_all(entries: Iterable[StreamEntry], *, max_bytes: int) -> tuple[list[Accepted], list[Refused]]:
    """Split entries into accepted and refused, keeping stream order in each list."""
    accepted: list[Accepted] = []
    refused: list[Refused] = []
    for entry in entries:
        result = classify(entry, max_bytes=max_bytes)
        if isinstance(result, Accepted):
            accepted.append(result)
        else:
            refused.append(result)
    return accepted, refused


def job_id(tag: str, stream_ids: Sequence[str]) -> str:
    """``fx-<tag>-<first id>-<count>-<digest>``: the same ids always give the same job id."""
    if not stream_ids:
        raise ValueError("a job needs at least one event")
    digest = hashlib.sha256("\n".join(stream_ids).encode()).hexdigest()[:12]
    return f"fx-{tag}-{stream_ids[0]}-{len(stream_ids)}-{digest}"


def plan_jobs(
    accepted: Sequence[Accepted],
    *,
    tag: str,
    max_events: int,
    max_bytes: int,
    by_project: bool = True,
    pack_events: int | None = None,
) -> list[JobPlan]:
    """Group by (owner, project_key); cut each group into jobs, or (not ``by_project``) pack whole groups.

    Packing puts whole groups into one job while it stays within ``pack_events`` (default and at most
    ``max_events``) and ``max_bytes``; a group that does not fit starts a job, and any group is cut at
    ``max_events``. So a big project of a backlog keeps jobs of its own (cut only at ``max_events``: two
    jobs of one project would wait for each other's lock), and many small ones share a job.
    """
    pack = max_events if pack_events is None else min(pack_events, max_events)
    groups: dict[tuple[str, str], list[Accepted]] = {}
    for item in accepted:
        groups.setdefault((item.owner, item.project_key), []).append(item)
    for members in groups.values():
        members.sort(key=lambda a: parse_stream_id(a.stream_id))
    plans: list[JobPlan] = []
    chunk: list[Accepted] = []
    size = 0
    for members in groups.values():
        if by_project or (
            chunk
            and (len(chunk) + len(members) > pack or size + sum(len(a.raw) for a in members) > max_bytes)
        ):  # a new job per project; spanning jobs take whole projects while they fit
            if chunk:
                plans.append(_plan(tag, chunk))
            chunk, size = [], 0
        for item in members:
            if chunk and (len(chunk) >= max_events or size + len(item.raw) > max_bytes):
                plans.append(_plan(tag, chunk))
                chunk, size = [], 0
            chunk.append(item)
            size += len(item.raw)
    if chunk:
        plans.append(_plan(tag, chunk))
    return plans


def _plan(tag: str, chunk: list[Accepted]) -> JobPlan:
    return JobPlan(job_id(tag, [a.stream_id for a in chunk]), tuple(chunk))
