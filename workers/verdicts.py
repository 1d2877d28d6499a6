"""Verdicts in a batch: apply them to the store, hold the early ones, drop the ones for deleted entries.

The thin I/O shell over ``store.verdicts`` (precedence, idempotence) for ``workers.jobs.run_batch``:

- A verdict whose entry the log holds is applied (``FixStore.apply_verdicts``): ``applied`` when it is the
  verdict in effect afterwards, ``superseded`` when one of higher precedence (or later, same source) is.
- A verdict whose entry the log does not hold yet (it came before its turn) is **held** in Redis
  (``fixmem:verdicts:held``: entry id -> the waiting verdicts; ``fixmem:verdicts:due``: entry id -> when
  they expire, ``verdict_hold_seconds`` after the first) and applied by the batch that appends the entry.
  Whoever comes second sees the other: the verdict's batch writes the hold and then looks at the log again;
  the turn's batch appends and then reads the holds. Applying twice is harmless (idempotent).
- A verdict for an entry ``forget`` deleted, or that rotation dropped within the hold window
  (``fixmem:verdicts:gone``: entry id -> when), is counted and dropped. One held past its window is
  counted ``expired`` and dropped.

Counting (``BatchReport.verdicts``, ``source|outcome|result``): once per verdict per successful batch
commit. A held verdict counts ``held`` when it starts waiting and its final result (``applied``,
``superseded``, ``expired`` …) when it is settled. Lines are never counted here: ``entries_total`` counts
the agent's own label of each line written (``store.verdicts.agent_outcome``), which no verdict changes,
so the entries counters still equal the lines in the logs.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis
from redis.client import Pipeline

from ingest import keys
from ingest.schema import VerdictEvent
from store import FixStore
from store.api import Judged
from store.verdicts import Verdict
from workers.linker import link_verdict

log = logging.getLogger("fixmem.workers.verdicts")
MAX_HELD_PER_ENTRY = 16  # verdicts kept waiting for one entry; more are counted dropped_full
EXPIRE_PER_BATCH = 200  # held entries a batch expires at most (the rest at the next batch)


@dataclass(frozen=True, slots=True)
class Pending:
    """A verdict and the project log its entry belongs to."""

    owner: str
    project_key: str
    verdict: Verdict

    def encode(self) -> str:
        """Deterministic JSON (the same verdict held twice is one)."""
        v = self.verdict
        return orjson.dumps(
            {
                "owner": self.owner,
                "project_key": self.project_key,
                "entry_id": v.entry_id,
                "source": v.source,
                "outcome": v.outcome,
                "ts": v.ts,
                "detail": v.detail,
                "via": v.via,
            },
            option=orjson.OPT_SORT_KEYS,
        ).decode()

    @classmethod
    def decode(cls, text: str | bytes) -> Pending | None:
        """The inverse of ``encode``; None for a value no build wrote."""
        try:
            d = orjson.loads(text)
            return cls(
                d["owner"],
                d["project_key"],
                Verdict(d["entry_id"], d["source"], d["outcome"], d["ts"], d["detail"], d.get("via", "")),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


@dataclass
class Settled:
    """What the batch's verdicts came to: counts, and the Redis writes its commit makes."""

    counts: Counter[str] = field(default_factory=Counter)  # source|outcome|result
    overturns: Counter[str] = field(default_factory=Counter)  # source|agent outcome|verdict outcome
    released: set[str] = field(default_factory=set)  # entry ids whose held verdicts were settled
    unlinked: Counter[str] = field(default_factory=Counter)  # link verdicts not applied, by reason

    def count(self, pending: Pending, result: str) -> None:
        """Count one verdict's result."""
        self.counts[f"{pending.verdict.source}|{pending.verdict.outcome}|{result}"] += 1


# KEYS: held hash, due zset; ARGV: entry id, encoded verdict, deadline, most per entry. 1 held, 0 known,
# -1 full.
_HOLD = """
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local list = {}
if cur then list = cjson.decode(cur) end
for _, v in ipairs(list) do if v == ARGV[2] then return 0 end end
if #list >= tonumber(ARGV[4]) then return -1 end
table.insert(list, ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(list))
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
return 1
"""

# KEYS: due zset, held hash, verdict counters; ARGV: now, limit. Counts and drops what waited too long.
_EXPIRE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local cur = redis.call('HGET', KEYS[2], id)
  if cur then
    for _, v in ipairs(cjson.decode(cur)) do
      local ok, d = pcall(cjson.decode, v)
      if ok and type(d) == 'table' and d['source'] and d['outcome'] then
        redis.call('HINCRBY', KEYS[3], d['source'] .. '|' .. d['outcome'] .. '|expired', 1)
      end
    end
  end
  redis.call('HDEL', KEYS[2], id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids
"""


def held_for(client: redis.Redis, entry_ids: Iterable[str]) -> list[Pending]:
    """The verdicts waiting for ``entry_ids``, oldest first per entry (one round trip)."""
    ids = sorted(set(entry_ids))
    if not ids:
        return []
    found: list[Pending] = []
    for value in client.hmget(keys.VERDICTS_HELD, ids):
        if value is None:
            continue
        try:
            items = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        found.extend(p for p in (Pending.decode(str(i)) for i in items if isinstance(i, str)) if p)
    return found


def linked(store: FixStore, events: Sequence[VerdictEvent]) -> tuple[list[Pending], Counter[str]]:
    """The verdicts ``events`` (link verdicts, ``workers.linker``) give the entries of their projects' logs
    as they are now, and the reasons of those left unapplied. A link that finds nothing is not held: the
    turns it could judge are already recorded when CI or git judges their commit. Raises StoreError."""
    pending: list[Pending] = []
    unlinked: Counter[str] = Counter()
    logs: dict[tuple[str, str], list[Any]] = {}
    for event in events:
        assert event.link is not None
        where = (event.owner, event.project_key)
        if where not in logs:
            logs[where] = store.read(*where).entries
        result = link_verdict(event.link, event.outcome, event.ts, logs[where])
        unlinked.update(result.unlinked)
        for target, outcome in result.targets:
            verdict = Verdict(target, event.source, outcome, event.ts, event.detail, result.by)
            pending.append(Pending(event.owner, event.project_key, verdict))
        if result.unlinked:
            log.info("verdict %s: %s", event.link.commit or event.link.session_id, ", ".join(result.unlinked))
    return pending, unlinked


def _apply(store: FixStore, pending: Sequence[Pending]) -> list[Judged]:
    """``store.apply_verdicts`` per project, answers in ``pending`` order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, p in enumerate(pending):
        groups.setdefault((p.owner, p.project_key), []).append(i)
    out: list[Judged | None] = [None] * len(pending)
    for (owner, project_key), rows in groups.items():
        judged = store.apply_verdicts(owner, project_key, [pending[i].verdict for i in rows])
        for i, j in zip(rows, judged, strict=True):
            out[i] = j
    return [j for j in out if j is not None]


def _gone(client: redis.Redis, entry_ids: Sequence[str]) -> set[str]:
    if not entry_ids:
        return set()
    with client.pipeline(transaction=False) as pipe:
        for i in entry_ids:
            pipe.zscore(keys.VERDICTS_GONE, i)
        scores = pipe.execute()
    return {i for i, s in zip(entry_ids, scores, strict=True) if s is not None}


def settle(
    client: redis.Redis,
    store: FixStore,
    incoming: Sequence[Pending],
    waiting: Sequence[Pending],
    *,
    now: float,
    hold_seconds: float,
) -> Settled:
    """Apply ``incoming`` (the batch's verdicts) and ``waiting`` (held ones whose entry the batch holds).

    Writes holds at once (so a turn appended meanwhile finds them); the counts and the release of settled
    holds are for the batch's commit (``record``). Raises StoreError, RedisError.
    """
    settled = Settled()
    every = [*incoming, *waiting]
    judged = _apply(store, every)
    missing = [(p, j) for p, j in zip(every, judged, strict=True) if j.state == "missing"]
    gone = _gone(client, [p.verdict.entry_id for p, _ in missing])
    to_hold: list[Pending] = []
    for p, j in zip(every, judged, strict=True):
        if j.state in ("applied", "superseded"):
            _count_final(settled, p, j)
        elif j.state == "forgotten" or p.verdict.entry_id in gone:
            result = "dropped_forgotten" if j.state == "forgotten" else "dropped_rotated"
            log.info("verdict on %s dropped: its entry was %s", p.verdict.entry_id, result[8:])
            settled.count(p, result)
            settled.released.add(p.verdict.entry_id)
        else:
            to_hold.append(p)
    if not to_hold:
        return settled
    deadline = now + hold_seconds
    full: list[Pending] = []
    for p in to_hold:
        held = client.eval(
            _HOLD, 2, keys.VERDICTS_HELD, keys.VERDICTS_DUE, p.verdict.entry_id, p.encode(), repr(deadline),
            MAX_HELD_PER_ENTRY,
        )  # fmt: skip
        if held == -1:
            full.append(p)
    # A turn appended between the look above and the hold: its batch may have read the holds before ours.
    again = _apply(store, to_hold)
    for p, j in zip(to_hold, again, strict=True):
        if j.state in ("applied", "superseded"):
            _count_final(settled, p, j)
        elif p in waiting:
            pass  # still missing (its entry was rotated out at once): it keeps waiting
        elif p in full:
            log.warning(
                "verdict on %s dropped: %d wait for it already", p.verdict.entry_id, MAX_HELD_PER_ENTRY
            )
            settled.count(p, "dropped_full")
        else:
            settled.count(p, "held")
    return settled


def settle_batch(
    client: redis.Redis,
    store: FixStore,
    incoming: Sequence[Pending],
    links: Sequence[VerdictEvent],
    entry_ids: Collection[str],
    *,
    now: float,
    hold_seconds: float,
) -> Settled:
    """``settle`` a batch: its verdicts, its link verdicts once linked (``linked``) and the verdicts held
    for its entries ``entry_ids``. Raises StoreError, RedisError."""
    by_link, unlinked = linked(store, links)
    every = [*incoming, *by_link]
    waiting = held_for(client, entry_ids)
    settled = Settled()
    if every or waiting:
        settled = settle(client, store, every, waiting, now=now, hold_seconds=hold_seconds)
    settled.unlinked.update(unlinked)
    return settled


def _count_final(settled: Settled, p: Pending, j: Judged) -> None:
    settled.count(p, j.state)
    settled.released.add(p.verdict.entry_id)
    if j.state == "applied" and j.agent_outcome is not None and j.agent_outcome != p.verdict.outcome:
        settled.overturns[f"{p.verdict.source}|{j.agent_outcome}|{p.verdict.outcome}"] += 1


def record(
    pipe: Pipeline, settled: Settled, *, rotated: Sequence[str], now: float, hold_seconds: float
) -> None:
    """Queue on ``pipe`` (the batch's commit): release settled holds, remember rotated ids, expire."""
    if settled.released:
        pipe.hdel(keys.VERDICTS_HELD, *sorted(settled.released))
        pipe.zrem(keys.VERDICTS_DUE, *sorted(settled.released))
    if rotated:
        pipe.zadd(keys.VERDICTS_GONE, dict.fromkeys(rotated, now))
    pipe.zremrangebyscore(keys.VERDICTS_GONE, "-inf", now - hold_seconds)
    pipe.eval(
        _EXPIRE, 3, keys.VERDICTS_DUE, keys.VERDICTS_HELD, keys.METRICS_VERDICTS, repr(now), EXPIRE_PER_BATCH
    )
