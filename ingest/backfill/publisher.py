"""Publishing a backfill's events to its stream with their checkpoint fields, within two limits.

Two limits keep live traffic fast and Redis small: a token bucket (``rate`` events/s) and a backlog bound
(never more than ``max_backlog`` of this run's events not yet read by the consumer, nor more than
``max_queued_jobs`` backfill jobs waiting for a worker). Events go out in script calls of at most
``commit_events`` events and ``commit_bytes`` bytes (``ingest.backfill.checkpoint``); a file too big for one
call is cut into parts, and only its last part records the file in the checkpoint.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import redis
from rq import Queue

from ingest import keys
from ingest.backfill.checkpoint import PUBLISH_LUA, Checkpoint, encode_head_tail
from ingest.backfill.config import RunConfig
from ingest.backfill.follow import last_delivered
from ingest.backfill.rate import TokenBucket
from ingest.backfill.records import Drain, FileRecord
from ingest.batching import parse_stream_id
from ingest.connection import reply_text

__all__ = ["STALL_WARNING_SECONDS", "Listener", "Publisher", "Silent"]

log = logging.getLogger("fixmem.ingest.backfill")

STALL_WARNING_SECONDS = 30.0  # a backlog that does not move for this long: say nothing reads the stream


class Listener(Protocol):
    """What a progress display hears from ``run_backfill`` and ``follow``."""

    def started(self, files: int, total_bytes: int) -> None: ...
    def file_done(self, record: FileRecord) -> None: ...
    def published(self, events: int) -> None: ...  # sent (a dry run: parsed, would be sent)
    def waiting(self, message: str | None) -> None: ...
    def following(self, drain: Drain) -> None: ...


class Silent:
    """A listener that ignores everything (no display)."""

    def started(self, files: int, total_bytes: int) -> None:
        pass

    def file_done(self, record: FileRecord) -> None:
        pass

    def published(self, events: int) -> None:
        pass

    def waiting(self, message: str | None) -> None:
        pass

    def following(self, drain: Drain) -> None:
        pass


@dataclass
class _Part:
    """Some events of one file; ``last`` parts carry the file's record into the checkpoint."""

    record: FileRecord  # its ``sent`` lists all the file's events (stream ids not known yet)
    wires: list[bytes]  # this part's
    last: bool
    earlier_ids: list[str] = field(default_factory=list)  # stream ids of the file's earlier parts


class Publisher:
    """Publishes parts with their checkpoint fields, within the rate and the backlog bound."""

    def __init__(
        self,
        client: redis.Redis,
        config: RunConfig,
        checkpoint: Checkpoint,
        *,
        listener: Listener,
        stop: threading.Event,
        clock: Callable[[], float],
    ) -> None:
        self.client = client
        self.config = config
        self.checkpoint = checkpoint
        self.listener = listener
        self.stop = stop
        self.clock = clock
        self.bucket = TokenBucket(config.rate, burst=max(1.0, config.rate / 4))
        # rate-limited: calls of at most a quarter second's worth, for a smooth rate and a fine checkpoint
        self.commit_events = (
            config.commit_events
            if not config.rate
            else max(1, int(min(config.commit_events, config.rate / 4)))
        )
        self.script = client.register_script(PUBLISH_LUA)
        self.outstanding: deque[tuple[int, int]] = deque()  # this run's ids not yet read by the consumer
        self.queue_key = Queue(config.queue, connection=client).key
        self._queued = 0
        self.parts: list[_Part] = []
        self.size = 0
        self.count = 0

    def add(self, record: FileRecord, wires: Sequence[bytes]) -> list[FileRecord]:
        """Queue one file (``wires``: its events); returns the records of the files now in the stream."""
        done: list[FileRecord] = []
        earlier: list[str] = []
        start = 0
        while True:  # cut a file too big for one call into parts; only the last part records the file
            end = start
            size = self.size
            while end < len(wires) and (end == start or self._fits(end - start, size + len(wires[end]))):
                size += len(wires[end])
                end += 1
            last = end >= len(wires)
            part = _Part(record, list(wires[start:end]), last, list(earlier))
            self.parts.append(part)
            self.size, self.count = size, self.count + (end - start)
            if not last or self.count >= self.commit_events or self.size >= self.config.commit_bytes:
                ids, records = self.flush()
                done += records
                if not last:
                    earlier += ids[-(end - start) :]
            if last:
                return done
            start = end

    def _fits(self, count: int, size: int) -> bool:
        return self.count + count < self.commit_events and size < self.config.commit_bytes

    def flush(self) -> tuple[list[str], list[FileRecord]]:
        """Publish what is queued in one script call; returns the new ids and the completed records."""
        if not self.parts:
            return [], []
        self._wait_for_room(self.count)
        args: list[bytes | str | int] = [
            self.config.checkpoint_ttl_seconds,
            keys.EVENT_FIELD,
            len(self.parts),
        ]
        for part in self.parts:
            if part.last:
                head, tail = encode_head_tail(part.record, part.earlier_ids)
                args += [part.record.path, head, tail]
            else:
                args += ["", "", ""]
            args += [len(part.wires), *part.wires]
        ids = [reply_text(i) for i in self.script(keys=[self.config.stream, self.checkpoint.key], args=args)]
        self.outstanding.extend(parse_stream_id(i) for i in ids)
        records = []
        position = 0
        for part in self.parts:
            part_ids = ids[position : position + len(part.wires)]
            position += len(part.wires)
            if part.last:
                records.append(_with_ids(part.record, [*part.earlier_ids, *part_ids]))
        self.listener.published(len(ids))
        self.parts, self.size, self.count = [], 0, 0
        return ids, records

    def _wait_for_room(self, incoming: int) -> None:
        """Sleep for the rate limit, then while the pipeline is too far behind (see ``_behind``)."""
        delay = self.bucket.take(incoming, self.clock())
        if delay > 0:
            self.stop.wait(delay)
        progress_at = self.clock()
        last_seen: tuple[int, int] | None = None
        warned = False
        while (behind := self._behind(incoming)) is not None:
            if (len(self.outstanding), self._queued) != last_seen:
                last_seen, progress_at = (len(self.outstanding), self._queued), self.clock()
            elif not warned and self.clock() - progress_at > STALL_WARNING_SECONDS:
                warned = True
                log.warning(
                    "the pipeline has not moved for %.0fs (%s): is `fixmem up` (or `fixmem ingest` and "
                    "`fixmem worker`) running?",
                    STALL_WARNING_SECONDS, behind,
                )  # fmt: skip
            self.listener.waiting(behind)
            if self.stop.wait(0.1):
                break  # interrupted: publish this last part (atomic) and let the caller stop
        self.listener.waiting(None)

    def _behind(self, incoming: int) -> str | None:
        """Why publishing ``incoming`` more events must wait, or None: more than ``max_backlog`` of this
        run's events unread by the consumer, or more than ``max_queued_jobs`` jobs waiting for a worker
        (their events sit in Redis: together the two bound the memory a backfill holds there)."""
        if self.outstanding and len(self.outstanding) + incoming > self.config.max_backlog:
            self._forget_delivered()
            if self.outstanding and len(self.outstanding) + incoming > self.config.max_backlog:
                return f"consumer is {len(self.outstanding)} events behind"
        self._queued = int(self.client.llen(self.queue_key))
        if self._queued > self.config.max_queued_jobs:
            return f"{self._queued} backfill jobs wait for a worker"
        return None

    def _forget_delivered(self) -> None:
        last = last_delivered(self.client, self.config.stream, self.config.group)
        while self.outstanding and last is not None and self.outstanding[0] <= last:
            self.outstanding.popleft()


def _with_ids(record: FileRecord, ids: Sequence[str]) -> FileRecord:
    """``record`` with the stream ids Redis gave its events."""
    return dataclasses.replace(
        record, sent=tuple(s._replace(stream_id=i) for s, i in zip(record.sent, ids, strict=True))
    )
