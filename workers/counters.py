"""Fleet-wide counters in Redis: what every batch did, recorded in one pipeline, read back for metrics.

Each job returns a ``BatchReport`` (a value) and ``commit`` adds it to Redis hashes (``ingest.keys``
``METRICS_*``) with ``HINCRBY``/``HINCRBYFLOAT`` in the job's own pipeline, so the counts are the sum over
every worker process on every host, survive restarts, and need no file per process. ``read_counters``
returns them for the Prometheus collector and ``fixmem status``. No per-project or per-owner labels.

Histograms keep per-bucket counts (``in=<bound>``: values in (previous bound, bound]), ``sum`` and
``count``; ``read_counters`` turns them into the cumulative counts Prometheus exposes. A batch so writes one
field per bucket its values fall in (usually one), not one per bound: a histogram used to cost up to 15
HINCRBYs per job (what it saved: docs/performance.md, "Measured in the pipeline").
Cumulative ``le=<bound>`` fields written by earlier versions are still read and added. Buckets (seconds):

- ``event_to_entry_seconds`` (publish -> entry on disk; publish time = the stream id's milliseconds):
  ``EVENT_TO_ENTRY_BUCKETS`` = Prometheus' defaults from 10 ms, extended to 10 minutes for backlogs.
- ``batch_duration_seconds`` (a job's run time): ``BATCH_DURATION_BUCKETS`` = Prometheus' defaults
  (5 ms .. 10 s) plus 30 s and 60 s.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import redis
from redis.client import Pipeline

from ingest import keys
from ingest.errors import DeadLetterReason
from store.entry import OUTCOMES

EVENT_RESULTS: Final = (
    "recorded",
    "duplicate",
    "skipped_no_files",
    "skipped_disabled",
    "skipped_no_owner",
    "dead_letter",
    "verdict",  # a verdict event: what came of it is in ``BatchReport.verdicts``
)
VERDICT_RESULTS: Final = (
    "applied",  # the verdict in effect on its entry (its outcome is the entry's)
    "superseded",  # one of higher precedence, or later from the same source, is in effect
    "held",  # its entry is not in the log yet: it waits (``verdict_hold_seconds``)
    "expired",  # it waited too long: dropped
    "dropped_forgotten",  # its entry was deleted (``fixmem forget``)
    "dropped_rotated",  # rotation dropped its entry
    "dropped_full",  # too many verdicts already wait for its entry
)
OTHER_LABEL: Final = "other"  # harness / model values beyond the admitted set
UNKNOWN_LABEL: Final = "unknown"  # no harness / model in the event

# KEYS: agents hash, harness set, model set; ARGV: cap, then (harness, model, outcome, n) fours. A label
# value is admitted while its set has fewer than ``cap`` members, else counted as ``other``.
_AGENTS_SCRIPT = """
local cap = tonumber(ARGV[1])
local function admit(set, v)
  if v == 'other' or redis.call('SISMEMBER', set, v) == 1 then return v end
  if redis.call('SCARD', set) < cap then redis.call('SADD', set, v) return v end
  return 'other'
end
for i = 2, #ARGV, 4 do
  local h = admit(KEYS[2], ARGV[i])
  local m = admit(KEYS[3], ARGV[i + 1])
  redis.call('HINCRBY', KEYS[1], h .. '|' .. m .. '|' .. ARGV[i + 2], tonumber(ARGV[i + 3]))
end
return 0
"""
DEAD_LETTER_REASONS: Final = tuple(r.value for r in DeadLetterReason)
EVENT_TO_ENTRY_BUCKETS: Final = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
)  # fmt: skip
BATCH_DURATION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

_MAX_SCRIPT = """
local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > current then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0
"""
LAST_ENTRY_FIELD: Final = "last_entry_timestamp_seconds"


@dataclass(frozen=True)
class BatchReport:
    """What one batch did. Counts by label; latencies in seconds, one per recorded entry."""

    events: Mapping[str, int] = field(default_factory=dict)  # by result (EVENT_RESULTS)
    entries: Mapping[str, int] = field(default_factory=dict)  # recorded entries by outcome
    rotation_dropped: Mapping[str, int] = field(default_factory=dict)  # by outcome
    latencies: Sequence[float] = ()  # publish -> entry on disk
    duration_seconds: float = 0.0
    last_entry_ts: float | None = None  # unix seconds the last entry reached disk
    quarantined: int = 0  # malformed lines the store moved aside
    verdicts: Mapping[str, int] = field(default_factory=dict)  # by ``source|outcome|result``
    overturns: Mapping[str, int] = field(default_factory=dict)  # by ``source|agent outcome|verdict outcome``
    agents: Mapping[str, int] = field(default_factory=dict)  # recorded entries by ``harness|model|outcome``
    unlinked: Mapping[str, int] = field(default_factory=dict)  # link verdicts not applied, by reason

    def to_json(self) -> dict[str, Any]:
        """A JSON value (what the RQ job returns)."""
        return {
            "events": dict(self.events),
            "entries": dict(self.entries),
            "rotation_dropped": dict(self.rotation_dropped),
            "latencies": list(self.latencies),
            "duration_seconds": self.duration_seconds,
            "last_entry_ts": self.last_entry_ts,
            "quarantined": self.quarantined,
            "verdicts": dict(self.verdicts),
            "overturns": dict(self.overturns),
            "agents": dict(self.agents),
            "unlinked": dict(self.unlinked),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> BatchReport:
        """The inverse of ``to_json``; raises KeyError/TypeError on a malformed value."""
        return cls(
            events=dict(value["events"]),
            entries=dict(value["entries"]),
            rotation_dropped=dict(value["rotation_dropped"]),
            latencies=tuple(value["latencies"]),
            duration_seconds=float(value["duration_seconds"]),
            last_entry_ts=value["last_entry_ts"],
            quarantined=int(value.get("quarantined", 0)),
            verdicts=dict(value.get("verdicts", {})),
            overturns=dict(value.get("overturns", {})),
            agents=dict(value.get("agents", {})),
            unlinked=dict(value.get("unlinked", {})),
        )


def bucket_counts(values: Iterable[float], bounds: Sequence[float]) -> list[int]:
    """How many of ``values`` fall in each bucket (previous bound, bound] (pure; ``bounds`` ascending;
    a value above the last bound is in none: the +Inf bucket is the histogram's count)."""
    counts = [0] * len(bounds)
    for value in values:
        index = bisect.bisect_left(bounds, value)
        if index < len(bounds):
            counts[index] += 1
    return counts


def bucket_field(bound: float) -> str:
    """The hash field of one bucket's own count: ``in=0.005``."""
    return f"in={bound:g}"


def legacy_bucket_field(bound: float) -> str:
    """The hash field of a cumulative count written by earlier versions: ``le=0.005``."""
    return f"le={bound:g}"


def _observe(pipe: Pipeline, key: str, values: Sequence[float], bounds: Sequence[float]) -> None:
    if not values:
        return
    for bound, n in zip(bounds, bucket_counts(values, bounds), strict=True):
        if n:
            pipe.hincrby(key, bucket_field(bound), n)
    pipe.hincrby(key, "count", len(values))
    pipe.hincrbyfloat(key, "sum", float(sum(values)))


def commit(pipe: Pipeline, report: BatchReport, *, label_cap: int) -> None:
    """Queue every fleet counter of a batch's ``report`` on ``pipe``, its commit (``run_batch``): the one
    step through which a batch's counters reach Redis (``record``, then ``record_agents``)."""
    record(pipe, report)
    record_agents(pipe, report.agents, label_cap=label_cap)


def record(pipe: Pipeline, report: BatchReport) -> None:
    """Queue every counter of ``report`` on ``pipe`` (the caller executes it with its other writes).

    The ``dead_letter`` result is skipped: ``ingest.dead_letters.add`` counts it where it writes it.
    The per-agent counts are ``record_agents``'s (they need the label cap).
    """
    for result, n in report.events.items():
        if n and result != "dead_letter":
            pipe.hincrby(keys.METRICS_EVENTS, result, n)
    for outcome, n in report.entries.items():
        if n:
            pipe.hincrby(keys.METRICS_ENTRIES, outcome, n)
    for outcome, n in report.rotation_dropped.items():
        if n:
            pipe.hincrby(keys.METRICS_ROTATION_DROPPED, outcome, n)
    for key, counts in (
        (keys.METRICS_VERDICTS, report.verdicts),
        (keys.METRICS_OVERTURNS, report.overturns),
        (keys.METRICS_VERDICTS_UNLINKED, report.unlinked),
    ):
        for label, n in counts.items():
            if n:
                pipe.hincrby(key, label, n)
    if report.quarantined:
        pipe.hincrby(keys.METRICS_PIPELINE, "lines_quarantined", report.quarantined)
    _observe(pipe, keys.HIST_EVENT_TO_ENTRY, report.latencies, EVENT_TO_ENTRY_BUCKETS)
    _observe(pipe, keys.HIST_BATCH_DURATION, [report.duration_seconds], BATCH_DURATION_BUCKETS)
    pipe.hincrby(keys.METRICS_PIPELINE, "jobs_done", 1)
    if report.last_entry_ts is not None:
        pipe.eval(_MAX_SCRIPT, 1, keys.METRICS_GAUGES, LAST_ENTRY_FIELD, repr(report.last_entry_ts))


def record_agents(pipe: Pipeline, agents: Mapping[str, int], *, label_cap: int) -> None:
    """Queue the entries by ``harness|model|outcome`` on ``pipe``; beyond ``label_cap`` harness (and model)
    values admitted fleet-wide, a new value counts as ``other`` (bounded label sets)."""
    fours: list[str | int] = []
    for label, n in sorted(agents.items()):
        if n:
            fours.extend([*label.split("|"), n])
    if fours:
        pipe.eval(
            _AGENTS_SCRIPT, 3, keys.METRICS_AGENTS, keys.LABELS_HARNESS, keys.LABELS_MODEL, label_cap, *fours
        )


@dataclass(frozen=True)
class Histogram:
    """A histogram as stored: cumulative ``(upper bound, count)`` pairs, the sum and the count."""

    buckets: tuple[tuple[float, int], ...]
    sum: float
    count: int


@dataclass(frozen=True)
class FleetCounters:
    """Every fleet counter at one moment; missing labels read as 0."""

    events: Mapping[str, int]
    entries: Mapping[str, int]
    rotation_dropped: Mapping[str, int]
    dead_letters: Mapping[str, int]
    pipeline: Mapping[str, int]
    event_to_entry: Histogram
    batch_duration: Histogram
    last_entry_ts: float | None
    verdicts: Mapping[str, int] = field(default_factory=dict)  # ``source|outcome|result``
    overturns: Mapping[str, int] = field(default_factory=dict)  # ``source|agent|verdict``
    agents: Mapping[str, int] = field(default_factory=dict)  # ``harness|model|outcome``
    verdicts_held: int = 0  # entries with verdicts waiting for them (a gauge)
    unlinked: Mapping[str, int] = field(default_factory=dict)  # link verdicts not applied, by reason


def _ints(raw: Mapping[bytes, bytes], labels: Iterable[str] = ()) -> dict[str, int]:
    values = {label: 0 for label in labels}
    for k, v in raw.items():
        values[k.decode()] = int(float(v))
    return values


def _histogram(raw: Mapping[bytes, bytes], bounds: Sequence[float]) -> Histogram:
    fields = {k.decode(): v for k, v in raw.items()}
    own = itertools.accumulate(int(fields.get(bucket_field(b), 0)) for b in bounds)
    return Histogram(
        buckets=tuple(
            (b, n + int(fields.get(legacy_bucket_field(b), 0))) for b, n in zip(bounds, own, strict=True)
        ),
        sum=float(fields.get("sum", 0.0)),
        count=int(fields.get("count", 0)),
    )


def read_counters(client: redis.Redis) -> FleetCounters:
    """All fleet counters in one round trip (consistent with each job's MULTI/EXEC)."""
    with client.pipeline(transaction=True) as pipe:
        for key in keys.ALL_METRICS:
            pipe.hgetall(key)
        pipe.hlen(keys.VERDICTS_HELD)
        *replies, held = pipe.execute()
        raw = dict(zip(keys.ALL_METRICS, replies, strict=True))
    last = raw[keys.METRICS_GAUGES].get(LAST_ENTRY_FIELD.encode())
    return FleetCounters(
        events=_ints(raw[keys.METRICS_EVENTS], EVENT_RESULTS),
        entries=_ints(raw[keys.METRICS_ENTRIES], OUTCOMES),
        rotation_dropped=_ints(raw[keys.METRICS_ROTATION_DROPPED], OUTCOMES),
        dead_letters=_ints(raw[keys.METRICS_DEAD_LETTERS], DEAD_LETTER_REASONS),
        pipeline=_ints(raw[keys.METRICS_PIPELINE]),
        event_to_entry=_histogram(raw[keys.HIST_EVENT_TO_ENTRY], EVENT_TO_ENTRY_BUCKETS),
        batch_duration=_histogram(raw[keys.HIST_BATCH_DURATION], BATCH_DURATION_BUCKETS),
        last_entry_ts=float(last) if last else None,
        verdicts=_ints(raw[keys.METRICS_VERDICTS]),
        overturns=_ints(raw[keys.METRICS_OVERTURNS]),
        agents=_ints(raw[keys.METRICS_AGENTS]),
        verdicts_held=int(held),
        unlinked=_ints(raw[keys.METRICS_VERDICTS_UNLINKED]),
    )


def agent_label(value: str | None) -> str:
    """A harness or model name as a label value: ``unknown`` when absent, at most 64 characters, no ``|``."""
    text = (value or "").strip().replace("|", "/")[:64]
    return text or UNKNOWN_LABEL
