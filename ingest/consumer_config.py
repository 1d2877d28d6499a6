"""What the stream consumer (``ingest.consumer``) is given and what it reports: its routes, its
configuration and its own counts."""

from __future__ import annotations

from dataclasses import dataclass, field

# The job function, by import path (ingest imports no workers); named for stream-id batches.
PROCESS_BATCH = "workers.jobs.process_stream_batch"


@dataclass(frozen=True, slots=True)
class Route:
    """One stream and the RQ queue its jobs go to; ``tag`` goes into job ids (``live``, ``backfill``).

    ``by_project`` False (both routes fixmem wires): jobs span projects (``batching.plan_jobs``), so under a
    steady flow a cycle's few events per project make one job, not one per project; True: a job per
    project. ``job_max_events`` overrides the consumer's for this route (backfill jobs stay short, so a
    live job never waits long for a worker).
    """

    stream: str
    queue: str
    tag: str
    by_project: bool = True
    job_max_events: int | None = None


def retry_intervals(retries: int) -> list[int]:
    """Backoff between job retries in seconds: 1, 4, 16, 64, 256, then 600."""
    return [min(600, 4**n) for n in range(retries)]


@dataclass(frozen=True)
class ConsumerConfig:
    """Everything the consumer needs; built from fixmem's settings (which hold the defaults and say what each
    field means) by the composition root, ``fixmem.wiring.consumer_config``."""

    routes: tuple[Route, ...]  # read in this order: live first
    group: str
    consumer: str
    dead_stream: str
    dead_stream_max_len: int
    max_event_bytes: int
    read_count: int
    read_block_ms: int
    batch_max_events: int
    job_max_events: int
    job_pack_events: int
    job_max_bytes: int
    claim_idle_seconds: float
    claim_interval_seconds: float
    max_deliveries: int
    stream_max_len: int
    trim_interval_seconds: float
    backpressure_jobs: int
    job_timeout_seconds: int
    job_retries: int
    burst_max_wait_seconds: float  # burst: give up when a paused queue does not move this long
    job_function: str = PROCESS_BATCH


@dataclass
class ConsumerStats:
    """What this consumer did since it started (the fleet-wide counters live in Redis)."""

    handled: int = 0  # entries acknowledged: enqueued + dead-lettered + deleted
    enqueued: int = 0
    jobs: int = 0
    dead_letters: int = 0
    deleted: int = 0  # pending entries that were gone from the stream when reclaimed
    reclaimed: int = 0
    trimmed_acked: int = 0
    trimmed_over_cap: int = 0
    reconnects: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None  # burst mode only: why it stopped with entries left unread
