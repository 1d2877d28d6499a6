"""Prometheus metrics: the fleet's counters exported from Redis at scrape time, plus the API's own.

The layer has two halves:

- **Fleet metrics** come from Redis on every scrape (``FleetCollector``): the counters every worker and
  consumer adds to in its own pipeline (``workers.counters``, keys in ``ingest.keys``), the stream and
  queue gauges (``ingest.status``), and the outcome ratios computed from the counters. No process keeps
  them in memory, so no per-process registry, no multiprocess directory, no file per job: any number of
  worker processes on any number of hosts, restarted or not, add up in Redis. Every API replica exports
  the same fleet series; aggregate them with ``max without (instance)`` (the recording rules in
  ``deploy/`` do).
- **Process metrics** of the API itself: ``fixmem_recall_duration_seconds``, an ordinary in-process
  histogram (recalls are served by long-lived API processes, each a scrape target; sum them by ``le``),
  ``fixmem_api_requests_total``, ``fixmem_build_info`` (version labels, value 1) and the standard
  ``process_*`` series (CPU, memory, open fds, start time). No ``*_created`` series: they double every
  counter on dashboards and say nothing a restart's ``process_start_time_seconds`` does not.

``fleet_families`` is pure (a snapshot in, metric families out) and is what the tests check against;
``read_fleet_snapshot`` is the I/O. No per-project or per-owner labels anywhere (unbounded).
"""

from __future__ import annotations

import contextlib
import logging
import platform
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Final

import redis
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    Info,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from redis.backoff import NoBackoff
from redis.retry import Retry

from fixmem.settings import Settings
from ingest.batching import stream_id_seconds
from ingest.schema import VERDICT_SOURCES
from ingest.status import DEFAULT_ALIVE_WITHIN_SECONDS, PipelineStatus, pipeline_status
from store.entry import OUTCOMES
from workers.counters import VERDICT_RESULTS, FleetCounters, read_counters
from workers.counters import Histogram as StoredHistogram
from workers.linker import UNLINKED_REASONS

log = logging.getLogger("fixmem.metrics")

RECALL_DURATION_BUCKETS: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)  # fmt: skip
QUEUE_STATES: Final = ("queued", "started", "scheduled", "failed")
_OPERATION_RE: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_OPERATIONS: Final = 64  # pipeline counter fields exported; more would mean a bug writing labels
LAG_HELP: Final = (
    "Stream entries not yet delivered to the group. Exact on Redis >= 7 (XINFO GROUPS lag) and on 6.2 "
    "when caught up; on 6.2 with a backlog, XLEN - pending: an upper bound that also counts entries "
    "acknowledged but not yet trimmed (at most one stream node plus trim_interval_seconds of "
    "acknowledgements; see ingest.status)."
)


@dataclass(frozen=True)
class FleetSource:
    """Where the fleet gauges live: streams by label (``live``, ``backfill``), group, queues, dead letters."""

    streams: Mapping[str, str]
    group: str
    queues: Sequence[str]
    dead_stream: str
    alive_within: float = DEFAULT_ALIVE_WITHIN_SECONDS  # a worker's heartbeat this recent: alive

    @classmethod
    def from_settings(cls, settings: Settings) -> FleetSource:
        """The streams, group and queues ``settings`` names."""
        return cls(
            streams={"live": settings.stream, "backfill": settings.backfill_stream},
            group=settings.group,
            queues=(settings.live_queue, settings.backfill_queue),
            dead_stream=settings.dead_stream,
            alive_within=settings.job_lease_seconds,
        )


@dataclass(frozen=True)
class FleetSnapshot:
    """Everything the fleet metrics show, read at one scrape."""

    counters: FleetCounters
    status: PipelineStatus
    stream_labels: Mapping[str, str]  # stream key -> label
    last_event_ts: Mapping[str, float]  # stream label -> unix seconds of its newest event id


def outcome_ratios(entries: Mapping[str, int]) -> dict[str, float]:
    """Each outcome's share of all entries, in 0..1, summing to 1; all 0 when there are none (pure)."""
    counts = {o: max(0, int(entries.get(o, 0))) for o in OUTCOMES}
    total = sum(counts.values())
    return {o: (n / total if total else 0.0) for o, n in counts.items()}


def _counter(name: str, doc: str, label: str, values: Mapping[str, int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=[label])
    for value, n in sorted(values.items()):
        family.add_metric([value], float(n))
    return family


def _split_counter(
    name: str,
    doc: str,
    labels: Sequence[str],
    values: Mapping[str, int],
    allowed: Sequence[Sequence[str] | None],
) -> CounterMetricFamily:
    """A counter whose stored fields are ``a|b|c`` label values; a field with a value outside ``allowed``
    (None: any, the writer bounds it) is left out, so no stray field makes an unbounded label."""
    family = CounterMetricFamily(name, doc, labels=list(labels))
    for field, n in sorted(values.items()):
        parts = field.split("|")
        if len(parts) == len(labels) and all(
            a is None or p in a for p, a in zip(parts, allowed, strict=True)
        ):
            family.add_metric(parts, float(n))
    return family


def _histogram(name: str, doc: str, stored: StoredHistogram) -> HistogramMetricFamily:
    buckets: list[tuple[str, float]] = [(f"{bound:g}", float(n)) for bound, n in stored.buckets]
    buckets.append(("+Inf", float(stored.count)))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=stored.sum)


def _operations(pipeline: Mapping[str, int]) -> dict[str, int]:
    names = sorted(k for k in pipeline if _OPERATION_RE.match(k))[:MAX_OPERATIONS]
    return {k: pipeline[k] for k in names}


def fleet_families(snapshot: FleetSnapshot) -> list[Metric]:
    """The fleet's metric families from one snapshot (pure)."""
    c, status = snapshot.counters, snapshot.status
    families: list[Metric] = [
        _counter("fixmem_entries_total", "Fix-log entries recorded by the fleet, by outcome.", "outcome",
                 {o: c.entries.get(o, 0) for o in OUTCOMES}),
        _counter("fixmem_events_total", "Turn events handled, by result.", "result", c.events),
        _counter("fixmem_dead_letters_total", "Events dead-lettered, by reason.", "reason", c.dead_letters),
        _counter("fixmem_rotation_dropped_total", "Entries dropped by rotation, by outcome.", "outcome",
                 {o: c.rotation_dropped.get(o, 0) for o in OUTCOMES}),
        _counter("fixmem_pipeline_operations_total",
                 "Pipeline housekeeping (jobs enqueued/done, reclaims, trims, requeues), by operation.",
                 "operation", _operations(c.pipeline)),
        _split_counter("fixmem_verdicts_total",
                       "Verdicts (CI, benchmark, review, revert, merged) by source, outcome and what came of "
                       "them (applied: it decides its entry's outcome).",
                       ("source", "outcome", "result"), c.verdicts,
                       (VERDICT_SOURCES, OUTCOMES, VERDICT_RESULTS)),
        _split_counter("fixmem_verdict_overturns_total",
                       "Applied verdicts whose outcome differs from the agent's own label, by source, the "
                       "agent's label and the verdict's.",
                       ("source", "agent_outcome", "verdict_outcome"), c.overturns,
                       (VERDICT_SOURCES, OUTCOMES, OUTCOMES)),
        _counter("fixmem_verdicts_unlinked_total",
                 "Link verdicts (by commit, session or content) not applied, by reason: no_match, ambiguous, "
                 "failed_elsewhere (a CI run whose failures do not cover the entry).",
                 "reason", {r: c.unlinked.get(r, 0) for r in UNLINKED_REASONS}),
        _split_counter("fixmem_agent_entries_total",
                       "Entries recorded by harness (with its agent_version), model and the agent's own "
                       "outcome label; label values beyond FIXMEM_METRICS_LABEL_CAP are 'other'.",
                       ("harness", "model", "outcome"), c.agents, (None, None, OUTCOMES)),
    ]  # fmt: skip
    ratio = GaugeMetricFamily(
        "fixmem_outcome_ratio",
        "Share of all entries recorded by the fleet, by outcome (0..1).",
        labels=["outcome"],
    )
    for outcome, share in outcome_ratios(c.entries).items():
        ratio.add_metric([outcome], share)
    families.append(ratio)
    families.append(
        _histogram("fixmem_event_to_entry_seconds", "Publish to entry on disk, per entry.", c.event_to_entry)
    )
    families.append(
        _histogram("fixmem_batch_duration_seconds", "Run time of one batch job.", c.batch_duration)
    )
    if c.last_entry_ts is not None:
        families.append(
            GaugeMetricFamily(
                "fixmem_last_entry_timestamp_seconds",
                "When the last entry reached disk (unix).",
                c.last_entry_ts,
            )
        )
    families.extend(_stream_families(snapshot))
    queue_jobs = GaugeMetricFamily(
        "fixmem_queue_jobs", "RQ jobs by queue and state.", labels=["queue", "state"]
    )
    for q in status.queues:
        for state in QUEUE_STATES:
            queue_jobs.add_metric([q.name, state], float(getattr(q, state)))
    families.append(queue_jobs)
    families.append(
        GaugeMetricFamily("fixmem_dead_letters_stored", "Dead letters kept.", status.dead_letters)
    )
    families.append(
        GaugeMetricFamily("fixmem_workers", "RQ workers with a recent heartbeat.", status.workers)
    )
    families.append(
        GaugeMetricFamily(
            "fixmem_verdicts_held",
            "Entries with verdicts waiting for them (published before their turn, for at most "
            "FIXMEM_VERDICT_HOLD_SECONDS).",
            c.verdicts_held,
        )
    )
    return families


def _stream_families(snapshot: FleetSnapshot) -> list[Metric]:
    lag = GaugeMetricFamily("fixmem_stream_lag_entries", LAG_HELP, labels=["stream"])
    pending = GaugeMetricFamily(
        "fixmem_stream_pending_entries", "Delivered, not yet acknowledged.", labels=["stream"]
    )
    length = GaugeMetricFamily(
        "fixmem_stream_length_entries", "Entries kept in the stream.", labels=["stream"]
    )
    newest = GaugeMetricFamily(
        "fixmem_stream_last_event_timestamp_seconds",
        "Publish time of the newest event (unix).",
        labels=["stream"],
    )
    for s in snapshot.status.streams:
        label = snapshot.stream_labels.get(s.stream, s.stream)
        lag.add_metric([label], float(s.lag))
        pending.add_metric([label], float(s.pending))
        length.add_metric([label], float(s.length))
        if label in snapshot.last_event_ts:
            newest.add_metric([label], snapshot.last_event_ts[label])
    return [lag, pending, length, newest]


def _last_event_ts(last_generated: str | None) -> float | None:
    """Unix seconds of the stream's last generated id (its publish time), None for no stream or entry."""
    seconds = stream_id_seconds(last_generated or "0-0")
    return seconds if seconds > 0 else None


def read_fleet_snapshot(client: redis.Redis, source: FleetSource) -> FleetSnapshot:
    """Counters, streams, queues and newest events from Redis (about a dozen round trips).

    Raises redis.exceptions.RedisError when Redis does not answer.
    """
    counters = read_counters(client)
    status = pipeline_status(
        client,
        streams=list(source.streams.values()),
        group=source.group,
        queues=source.queues,
        dead_stream=source.dead_stream,
        alive_within=source.alive_within,
    )
    generated = {s.stream: s.last_generated for s in status.streams}
    newest = {label: _last_event_ts(generated[stream]) for label, stream in source.streams.items()}
    return FleetSnapshot(
        counters=counters,
        status=status,
        stream_labels={stream: label for label, stream in source.streams.items()},
        last_event_ts={label: ts for label, ts in newest.items() if ts is not None},
    )


def scrape_client(url: str, *, timeout: float = 2.0) -> redis.Redis:
    """A client for the collector: short timeouts and no retries, so a scrape with Redis down is fast.

    Raises ValueError on a malformed URL.
    """
    return redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0)
    )


class FleetCollector(Collector):
    """Reads the fleet metrics from Redis at each scrape; exports ``fixmem_redis_up`` 0 when it cannot."""

    def __init__(self, client: redis.Redis, source: FleetSource) -> None:
        self.client = client
        self.source = source
        self._was_up = True

    def describe(self) -> Iterable[Metric]:
        """Nothing up front: registering must not touch Redis (names are checked at scrape time)."""
        return []

    def collect(self) -> Iterable[Metric]:
        """The fleet families and ``fixmem_redis_up``; never raises for Redis being down."""
        try:
            snapshot = read_fleet_snapshot(self.client, self.source)
        except redis.exceptions.RedisError as exc:
            if self._was_up:
                log.warning("metrics: cannot read Redis (%s); exporting fixmem_redis_up 0", exc)
            self._was_up = False
            return [_redis_up(0)]
        if not self._was_up:
            log.info("metrics: Redis answers again")
        self._was_up = True
        return [*fleet_families(snapshot), _redis_up(1)]


def _redis_up(value: int) -> GaugeMetricFamily:
    return GaugeMetricFamily("fixmem_redis_up", "1 when the metrics scrape could read Redis.", value)


@dataclass(frozen=True)
class ApiMetrics:
    """The API process's registry and its own instruments."""

    registry: CollectorRegistry
    recall_duration: Histogram
    requests: Counter  # labels: method, route (the template, bounded), code


def build_labels() -> dict[str, str]:
    """The labels of ``fixmem_build_info``: fixmem's, Python's and the main libraries' versions."""
    labels = {"version": "unknown", "python": platform.python_version()}
    for label, dist in (("version", "fixmem"), ("redis_py", "redis"), ("rq", "rq"), ("fastapi", "fastapi")):
        with contextlib.suppress(metadata.PackageNotFoundError):
            labels[label] = metadata.version(dist)
    return labels


def api_metrics(client: redis.Redis | None, source: FleetSource | None) -> ApiMetrics:
    """A fresh registry with the fleet collector (when a client is given), the recall histogram, the
    request counter, ``fixmem_build_info`` and the process collector."""
    disable_created_metrics()  # type: ignore[no-untyped-call]  # process-wide (prometheus_client's only switch): no `*_created` series
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    Info(
        "fixmem_build", "fixmem's version and those of Python and its main libraries.", registry=registry
    ).info(build_labels())
    if client is not None and source is not None:
        registry.register(FleetCollector(client, source))
    recall = Histogram(
        "fixmem_recall_duration_seconds",
        "Recalls served by this API process: store lookup and prompt block.",
        buckets=RECALL_DURATION_BUCKETS,
        registry=registry,
    )
    requests = Counter(
        "fixmem_api_requests_total",
        "HTTP requests served by this API process, by method, route template and status code.",
        ["method", "route", "code"],
        registry=registry,
    )
    return ApiMetrics(registry, recall, requests)
