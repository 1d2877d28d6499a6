"""The checkpoint of a backfill: the hash ``fixmem:backfill:<run key>``, and the Lua script that fills it.

One field per file (its absolute path), holding its ``FileRecord`` with the stream ids of its events. A
file's events and its field are written by ONE Lua script (atomic like MULTI/EXEC, and it can store the ids
Redis just assigned), so after any interruption — Ctrl-C, SIGKILL, a lost connection — a file is either
published and recorded or neither. A run with the same paths and options skips the recorded files whose
size and modification time are unchanged. The caller deletes the checkpoint when the backfill is complete
(``Checkpoint.clear``); a re-run after that publishes everything again, and the pipeline records each turn
once (deterministic event ids).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import redis

from ingest import keys
from ingest.backfill.records import FileRecord
from ingest.connection import reply_text

__all__ = ["PUBLISH_LUA", "Checkpoint", "decode_record", "encode_head_tail"]

# KEYS: stream, checkpoint. ARGV: ttl, event field, file count, then per file: checkpoint field ('' for a
# part that is not a file's last), JSON before the ids, JSON after them, event count, the events.
PUBLISH_LUA = """
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


class Checkpoint:
    """The checkpoint hash of one backfill run (see the module docstring)."""

    def __init__(self, client: redis.Redis, run_key: str) -> None:
        self.client = client
        self.key = keys.backfill_checkpoint(run_key)

    def load(self) -> dict[str, FileRecord]:
        """The recorded files by absolute path; values that do not parse are ignored (re-read)."""
        records = {}
        for name, raw in self.client.hscan_iter(self.key, count=1000):
            path = reply_text(name)
            record = decode_record(path, raw)
            if record is not None:
                records[path] = record
        return records

    def clear(self) -> None:
        """Forget this run (it is complete)."""
        self.client.delete(self.key)


def encode_head_tail(record: FileRecord, earlier_ids: Sequence[str]) -> tuple[bytes, bytes]:
    """The record's JSON split around the list of stream ids the script fills in."""
    body = orjson.loads(record.to_json())
    body["events"] = [[s.owner, s.project_key, s.event_id] for s in record.sent]
    body["ids_before"] = list(earlier_ids)
    del body["sent"]
    head = orjson.dumps(body)[:-1] + b',"ids":'
    return head, b"}"


def decode_record(path: str, raw: bytes | str) -> FileRecord | None:
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
