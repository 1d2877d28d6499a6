"""A batch's state in Redis, for ``workers.jobs.run_batch``: its hash, its events, its ids' counts.

``read_events`` reads the events a batch hash names (from its stream, or copied into the hash);
``present_before`` registers the batch's entry ids as in flight and saves which of them the logs held
before its first attempt; ``claim`` claims the count of the ids it wrote (``fixmem:count:owner``), in the
commit's WATCH; ``release`` queues, in the commit's MULTI, the release of its ids and the deletion of its
hash and hold. The Lua scripts keep each step atomic and a no-op once the batch hash is gone (done).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, cast

import orjson
import redis
from redis.client import Pipeline

from ingest import keys
from ingest.batching import parse_stream_id
from ingest.connection import entry_rows, reply_text
from store import FixStore


def read_events(
    client: redis.Redis,
    key: str,
    origin: str,
    fields: Mapping[bytes, bytes],
    cuts: Sequence[Sequence[Any]] | None,
) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The batch's ``(stream id, raw event)`` in stream order, and the ids gone from ``origin``.

    A field with an empty value names an event that waits in the stream: one pipelined ``XRANGE`` per run
    of ids adjacent in the stream (``cuts``: ``[first, last, count]``, written by the consumer), else per
    id. An id the stream no longer has is looked up in the batch hash again (``ingest.trim`` copies a
    failed job's events there before trimming them), then reported missing.
    """
    items: dict[str, bytes | None] = {reply_text(k): v for k, v in fields.items()}
    wanted = [i for i, v in items.items() if not v]
    missing: list[str] = []
    if wanted:
        if cuts is None or len(wanted) < len(items):  # some copied out (or an older batch): by id
            cuts = [(i, i, 1) for i in wanted]
        with client.pipeline(transaction=False) as pipe:
            for first, last, count in cuts:
                pipe.xrange(origin, min=first, max=last, count=count)
            replies = pipe.execute()
        for reply in replies:
            for stream_id, row in entry_rows(reply):
                body = row.get(keys.EVENT_FIELD)
                if body and stream_id in items:
                    items[stream_id] = body
        missing = [i for i in wanted if not items[i]]
        if missing:
            copied = cast(list[bytes | None], client.hmget(key, missing))
            items.update((i, v) for i, v in zip(missing, copied, strict=True) if v)
            missing = [i for i, v in zip(missing, copied, strict=True) if not v]
    found = sorted(((i, v) for i, v in items.items() if v), key=lambda kv: parse_stream_id(kv[0]))
    return found, missing


# KEYS: batch hash, in-flight counts; ARGV: the ids field, the batch's entry ids (JSON list).
# Once per batch (the ids field is the mark), only while the batch exists.
_REGISTER = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  for _, id in ipairs(cjson.decode(ARGV[2])) do redis.call('HINCRBY', KEYS[2], id, 1) end
end
return 1
"""

_SAVE_PRESENT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
"""

# KEYS: batch hash, owners; ARGV: the batch id, the ids it wrote. Returns [id, owner, ...], false if gone.
_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local out = {}
for i = 2, #ARGV do
  redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[1])
  out[#out + 1] = ARGV[i]
  out[#out + 1] = redis.call('HGET', KEYS[2], ARGV[i])
end
return out
"""

# KEYS: batch hash, in-flight counts, owners; ARGV: the ids field. The last batch holding an id drops
# its in-flight count and its owner.
_RELEASE = """
local ids = redis.call('HGET', KEYS[1], ARGV[1])
if not ids then return 0 end
for _, id in ipairs(cjson.decode(ids)) do
  if redis.call('HINCRBY', KEYS[2], id, -1) <= 0 then
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
  end
end
return 1
"""


def present_before(
    client: redis.Redis,
    store: FixStore,
    key: str,
    entries: Iterable[tuple[str, str, str]],
    saved: bytes | None,
    *,
    registered: bool,
) -> frozenset[str] | None:
    """The batch's entry ids (``entries``: owner, project key, entry id) the logs held before its first
    attempt; None when the batch is gone.

    First the batch registers its ids as in flight (once; before reading the logs, so a batch that
    counts one of them later keeps its claim until this one is done), then the first attempt reads
    the logs (no lock) and saves the answer in the batch hash, only while the hash exists; later attempts
    use the saved answer. Raises StoreError, RedisError.
    """
    wanted: dict[tuple[str, str], set[str]] = {}
    for owner, project_key, entry_id in entries:
        wanted.setdefault((owner, project_key), set()).add(entry_id)
    if not wanted:
        return frozenset()
    if not registered:
        ids = orjson.dumps(sorted(set().union(*wanted.values())))
        if not client.eval(_REGISTER, 2, key, keys.COUNT_INFLIGHT, keys.BATCH_IDS_FIELD, ids):
            return None
    if saved is not None:
        return frozenset(orjson.loads(saved))
    present = sorted(
        entry.id
        for (owner, project_key), ids in wanted.items()
        for entry in store.read(owner, project_key).entries
        if entry.id in ids
    )
    stored = client.eval(_SAVE_PRESENT, 1, key, keys.BATCH_PRESENT_FIELD, orjson.dumps(present))
    return None if stored is None else frozenset(orjson.loads(stored))


def release(pipe: Pipeline, key: str, batch_id: str, origin: str) -> None:
    """Queue the end of a batch on its commit: release its in-flight ids, delete its hash (the batch is
    done) and its hold (its events may be trimmed now, ``ingest.trim``)."""
    pipe.eval(_RELEASE, 3, key, keys.COUNT_INFLIGHT, keys.COUNT_OWNER, keys.BATCH_IDS_FIELD)
    pipe.delete(key)
    if origin:
        pipe.zrem(keys.held(origin), batch_id)


def claim(pipe: Pipeline, key: str, batch_id: str, ids: Collection[str]) -> dict[str, str] | None:
    """Claim the count of ``ids`` for ``batch_id`` where no batch has; id -> the batch that counts it.

    None when the batch is gone (another run finished it). Runs at once on a pipeline in WATCH mode.
    """
    if not ids:
        return {} if pipe.exists(key) else None
    reply = pipe.eval(_CLAIM, 2, key, keys.COUNT_OWNER, batch_id, *sorted(ids))
    if reply is None:
        return None
    flat = [reply_text(v) for v in reply]
    return dict(zip(flat[::2], flat[1::2], strict=True))
