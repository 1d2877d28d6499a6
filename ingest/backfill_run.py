"""Running a backfill: walk, import, publish to the backfill stream with a checkpoint; then follow the events.

``run_backfill`` walks the paths, imports each file (``ingest.importers``), plans it (``ingest.backfill``)
and publishes its events to the backfill stream, which the consumer reads only after the live stream and
whose jobs workers take only when the live queue is empty. Two limits keep live traffic fast and Redis
small: a token bucket (``rate`` events/s) and a backlog bound (never more than ``max_backlog`` of this
run's events not yet read by the consumer).

The checkpoint is the hash ``fixmem:backfill:<run key>``: one field per file (its absolute path), holding
its ``FileRecord`` with the stream ids of its events. A file's events and its field are written by ONE Lua
script (atomic like MULTI/EXEC, and it can store the ids Redis just assigned), so after any interruption —
Ctrl-C, SIGKILL, a lost connection — a file is either published and recorded or neither. A run with the
same paths and options skips the recorded files whose size and modification time are unchanged. The
caller deletes the checkpoint when the backfill is complete (``Checkpoint.clear``); a re-run after that
publishes everything again, and the pipeline records each turn once (deterministic event ids).

``ingest.backfill_follow.follow`` then tracks the run's stream ids through the pipeline.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

import orjson
import redis
from rq import Queue

from ingest import keys
from ingest.backfill import (
    MODIFIED_BEFORE_SINCE,
    BackfillError,
    FileRecord,
    Sent,
    TokenBucket,
    plan_file,
    skipped_unread,
)
from ingest.backfill_follow import Drain, last_delivered
from ingest.batching import parse_stream_id
from ingest.connection import text
from ingest.importers import FORMATS, import_file, iter_files

log = logging.getLogger("fixmem.ingest.backfill")

STALL_WARNING_SECONDS = 30.0  # a backlog that does not move for this long: say nothing reads the stream

# KEYS: stream, checkpoint. ARGV: ttl, event field, file count, then per file: checkpoint field ('' for a
# part that is not a file's last), JSON before the ids, JSON after them, event count, the events.
_PUBLISH = """
local i = 4
local all = {}
for f = 1, tonumber(ARGV[3]) do
  local name, head, tail, n = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  i = i + 4
  local ids = {}
  for e = 1, n do
    local id = redis.call('XADD', KEYS[1], '*', ARGV[2], ARGV[i])
    ids[#ids + 1] = id
    all[#all + 1] = id
    i = i + 1
  end
  if name ~= '' then
    local list = '[]'
    if #ids > 0 then list = cjson.encode(ids) end
    redis.call('HSET', KEYS[2], name, head .. list .. tail)
  end
end
redis.call('EXPIRE', KEYS[2], ARGV[1])
return all
"""


@dataclass(frozen=True)
class RunConfig:
    """One backfill's options. ``rate``: events/s (0: no limit); ``since``: unix seconds or None."""

    owner: str
    stream: str = keys.DEFAULT_BACKFILL_STREAM
    group: str = keys.DEFAULT_GROUP
    format: str = "auto"
    project: str | None = None
    since: float | None = None
    rate: float = 0.0
    queue: str = keys.DEFAULT_BACKFILL_QUEUE
    max_backlog: int = 50  # of this run's events not yet read by the consumer
    max_queued_jobs: int = 20  # backfill jobs waiting for a worker
    commit_events: int = 200  # events per script call (one round trip; Redis runs it atomically)
    commit_bytes: int = 1 << 20  # ... and bytes: a long script would stall live traffic
    parse_processes: int = 1  # files imported in parallel by this many processes (1: in this one)
    pool_min_bytes: int = 32 << 20  # ... once there is this much to read (starting them costs ~1 s each)
    parse_nice: int = 0  # added to the parse processes' niceness: live work gets the CPU first
    checkpoint_ttl_seconds: int = 14 * 86400


class Listener(Protocol):
    """What a progress display hears from ``run_backfill`` and ``follow``."""

    def started(self, files: int, total_bytes: int) -> None: ...
    def file_done(self, record: FileRecord) -> None: ...
    def published(self, events: int) -> None: ...  # sent (a dry run: parsed, would be sent)
    def waiting(self, message: str | None) -> None: ...
    def following(self, drain: Drain) -> None: ...


class _Silent:
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
class RunResult:
    """What ``run_backfill`` did: a record per walked file, in walk order."""

    records: list[FileRecord] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0
    bytes_read: int = 0  # bytes of the files this run read (resumed and unread-skipped files excluded)

    @property
    def sent(self) -> list[Sent]:
        """Every event of this backfill in the stream (including those of resumed files)."""
        return [s for r in self.records for s in r.sent]


# -- the checkpoint ---------------------------------------------------------------------------------------


class Checkpoint:
    """The checkpoint hash of one backfill run (see the module docstring)."""

    def __init__(self, client: redis.Redis, run_key: str) -> None:
        self.client = client
        self.key = keys.backfill_checkpoint(run_key)

    def load(self) -> dict[str, FileRecord]:
        """The recorded files by absolute path; values that do not parse are ignored (re-read)."""
        records = {}
        for name, raw in self.client.hscan_iter(self.key, count=1000):
            path = text(name)
            record = _decode_record(path, raw)
            if record is not None:
                records[path] = record
        return records

    def clear(self) -> None:
        """Forget this run (it is complete)."""
        self.client.delete(self.key)


def _encode_head_tail(record: FileRecord, earlier_ids: Sequence[str]) -> tuple[bytes, bytes]:
    """The record's JSON split around the list of stream ids the script fills in."""
    body = orjson.loads(record.to_json())
    body["events"] = [[s.owner, s.project_key, s.event_id] for s in record.sent]
    body["ids_before"] = list(earlier_ids)
    del body["sent"]
    head = orjson.dumps(body)[:-1] + b',"ids":'
    return head, b"}"


def _decode_record(path: str, raw: bytes | str) -> FileRecord | None:
    try:
        body = orjson.loads(raw)
        ids = [*body.pop("ids_before"), *body.pop("ids")]
        events = body.pop("events")
        if len(ids) != len(events):
            return None
        body["sent"] = [[i, *e] for i, e in zip(ids, events, strict=True)]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None
    return FileRecord.from_json(path, orjson.dumps(body))


# -- publishing -------------------------------------------------------------------------------------------


@dataclass
class _Part:
    """Some events of one file; ``last`` parts carry the file's record into the checkpoint."""

    record: FileRecord  # its ``sent`` lists all the file's events (stream ids not known yet)
    wires: list[bytes]  # this part's
    last: bool
    earlier_ids: list[str] = field(default_factory=list)  # stream ids of the file's earlier parts


class _Publisher:
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
        self.script = client.register_script(_PUBLISH)
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
                head, tail = _encode_head_tail(part.record, part.earlier_ids)
                args += [part.record.path, head, tail]
            else:
                args += ["", "", ""]
            args += [len(part.wires), *part.wires]
        ids = [text(i) for i in self.script(keys=[self.config.stream, self.checkpoint.key], args=args)]
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


# -- the run ----------------------------------------------------------------------------------------------


def walk(paths: Sequence[Path]) -> list[Path]:
    """Every file under ``paths`` once (the first path argument that reaches a file names it).

    Raises BackfillError naming a path that does not exist (before anything is read).
    """
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise BackfillError(f"no such file or directory: {', '.join(missing)}")
    seen: set[str] = set()
    found = []
    for root in paths:
        for path in iter_files([root]):
            absolute = _absolute(path)
            if absolute not in seen:
                seen.add(absolute)
                found.append(path)
    return found


def _absolute(path: Path) -> str:
    """The absolute path in POSIX form, symlinks not resolved (the checkpoint's field, the report's path)."""
    return Path(os.path.abspath(path)).as_posix()


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return 0, 0  # the import reports why it cannot be read
    return st.st_size, st.st_mtime_ns


class Planned(NamedTuple):
    """One file, ready to publish: its record (``sent`` without stream ids yet) and its events' wire bytes."""

    record: FileRecord
    wires: list[bytes]
    read_bytes: int = 0  # what was read to plan it (0: resumed, or skipped unread)


def plan_path(path: Path, size: int, mtime_ns: int, config: RunConfig) -> Planned:
    """Import and plan one file (in a parse process, or here): pure but for reading the file."""
    absolute = _absolute(path)
    if config.since is not None and mtime_ns and mtime_ns / 1e9 < config.since:
        return Planned(skipped_unread(absolute, size, mtime_ns, MODIFIED_BEFORE_SINCE), [])
    imported = import_file(path, format=config.format, owner=config.owner, project=config.project)
    record, events = plan_file(imported, path=absolute, size=size, mtime_ns=mtime_ns, since=config.since)
    sent = tuple(Sent("", e.owner, e.project_key, e.event_id) for e in events)
    return Planned(dataclasses.replace(record, sent=sent), [e.to_wire() for e in events], size)


def _parse_process(nice: int, parent: int) -> None:
    """Parse processes leave Ctrl-C to the parent (which stops after the file being published), yield the
    CPU to live work by ``nice``, and exit when the parent is gone (SIGKILL leaves them no other word)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        os.nice(nice)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _planned(
    files: Sequence[tuple[Path, int, int]], done: dict[str, FileRecord], config: RunConfig
) -> Generator[Planned, None, None]:
    """Each file's plan, in walk order: resumed from ``done``, or imported — by ``config.parse_processes``
    processes when more than one, at most ``LOOKAHEAD`` files per process ahead of the publisher."""
    pool = None
    to_read = sum(size for path, size, mtime_ns in files if not _resumable(done, path, size, mtime_ns))
    if config.parse_processes > 1 and len(files) > 1 and to_read >= config.pool_min_bytes:
        pool = ProcessPoolExecutor(
            config.parse_processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_parse_process,
            initargs=(config.parse_nice, os.getpid()),
        )
    window: deque[Future[Planned] | Planned] = deque()
    finished = False
    try:
        for path, size, mtime_ns in files:
            prior = _resumable(done, path, size, mtime_ns)
            if prior is not None:
                window.append(Planned(prior, []))
            elif pool is None:
                window.append(plan_path(path, size, mtime_ns, config))
            else:
                window.append(pool.submit(plan_path, path, size, mtime_ns, config))
            while len(window) > (LOOKAHEAD * config.parse_processes if pool else 0):
                head = window.popleft()
                yield head.result() if isinstance(head, Future) else head
        for head in window:
            yield head.result() if isinstance(head, Future) else head
        finished = True
    finally:
        if pool is not None:  # stopped early: do not wait for parses nobody will publish
            pool.shutdown(wait=finished, cancel_futures=True)


def _resumable(done: dict[str, FileRecord], path: Path, size: int, mtime_ns: int) -> FileRecord | None:
    """The checkpoint's record of ``path`` if the file is unchanged since."""
    prior = done.get(_absolute(path))
    return prior if prior is not None and prior.matches(size, mtime_ns) else None


LOOKAHEAD = 8  # files per parse process planned ahead of publishing (bounds memory under a slow pipeline)


def run_backfill(
    client: redis.Redis | None,
    paths: Sequence[Path],
    config: RunConfig,
    *,
    run_key: str | None = None,
    restart: bool = False,
    listener: Listener | None = None,
    stop: threading.Event | None = None,
    before_publish: Callable[[Sequence[Sent]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RunResult:
    """Import every file under ``paths`` and publish its events (``client`` None: a dry run, nothing sent).

    ``run_key`` names the checkpoint (None: none is kept); ``restart`` discards it first.
    ``before_publish`` sees each file's events (identities, no stream ids yet) before they are sent.
    ``stop`` ends the run after the events being published (``RunResult.interrupted``). Records carry
    absolute paths. Raises BackfillError for an unknown format or a missing path, redis errors when Redis
    fails (the checkpoint keeps what was published).
    """
    if config.format != "auto" and config.format not in FORMATS:
        raise BackfillError(f"unknown format {config.format!r}: expected auto or one of {', '.join(FORMATS)}")
    listener = listener or _Silent()
    stop = stop or threading.Event()
    started = clock()
    files = [(path, *_stat(path)) for path in walk(paths)]
    listener.started(len(files), sum(f[2] for f in files))
    publisher = None
    done: dict[str, FileRecord] = {}
    if client is not None:
        checkpoint = Checkpoint(client, run_key or "unnamed")
        if run_key is None or restart:
            checkpoint.clear()
        else:
            done = checkpoint.load()
        publisher = _Publisher(client, config, checkpoint, listener=listener, stop=stop, clock=clock)
    result = RunResult()

    def finish(records: Sequence[FileRecord]) -> None:
        for record in records:
            result.records.append(record)
            listener.file_done(record)

    with contextlib.closing(_planned(files, done, config)) as plans:
        for left, planned in enumerate(plans, start=1 - len(files)):  # left: files after this one
            if planned.record.resumed:
                finish([planned.record])
            else:
                result.bytes_read += planned.read_bytes
                if planned.record.sent and before_publish is not None:
                    before_publish(planned.record.sent)
                if publisher is None:  # a dry run: the events that would be published count as such
                    finish([planned.record])
                    listener.published(len(planned.record.sent))
                else:
                    finish(publisher.add(*planned[:2]))
            if stop.is_set() and left:
                result.interrupted = True
                break
    if publisher is not None:
        finish(publisher.flush()[1])
    result.records.sort(key=lambda r: r.path)
    result.seconds = clock() - started
    return result
