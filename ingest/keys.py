"""Every Redis key and name fixmem uses, in one place, under one prefix (``fixmem:``).

Nothing else builds key strings: modules call these functions or use these constants. Names that are
settings (the streams, the consumer group, the queue names) have their defaults here and are passed in.

RQ's own keys keep RQ's prefix (``rq:queue:<name>``, ``rq:job:<id>``, ``rq:wip:<name>`` …); fixmem only
chooses the queue names, which all start with ``fixmem-``.

Layout::

    fixmem:turns                      stream   live turn events (field ``event``)       [setting]
    fixmem:turns:backfill             stream   replayed turns, read after live ones     [setting]
    fixmem:dead                       stream   dead letters                             [setting]
    fixmem:batch:<job id>             hash     stream id -> "" (event in the stream) or the event (+ stream,
                                               runs, ids, present), until done
    fixmem:held:<stream>              zset     job id -> ms part of the oldest stream id it holds (trim floor)
    fixmem:count:inflight             hash     entry id -> unfinished batches holding it (exact counting)
    fixmem:count:owner                hash     entry id -> the batch that counted it, while one is unfinished
    fixmem:lock:project:<digest>      string   lease lock around one project's store write
    fixmem:reaper:seen:<job id>       string   when the reaper first saw a job stuck between dequeue and start
    fixmem:reaper:abandoned:<job id>  string   how many times a job's worker died under it
    fixmem:backfill:<run key>         hash     a backfill's checkpoint: file -> what it published (resume)
    fixmem:workspaces:<digest>        hash     one owner's workspace -> project key, as seen in events
    fixmem:verdicts:held              hash     entry id -> verdicts waiting for their turn (JSON list)
    fixmem:verdicts:due               zset     entry id -> when its held verdicts expire (unix seconds)
    fixmem:verdicts:gone              zset     entry id -> when rotation dropped it (kept for the hold window)
    fixmem:verdicts:git:<digest>      hash     one repository's scan-git cursor: ``source:sha`` -> the
                                               verdict published (ts, stream id); ``_head``, ``_at``
    fixmem:metrics:events             hash     events by result (recorded, duplicate, skipped_*, dead_letter)
    fixmem:metrics:entries            hash     entries by outcome (fixed, partial, unverified)
    fixmem:metrics:rotation_dropped   hash     rotation drops by outcome
    fixmem:metrics:dead_letters       hash     dead letters by reason
    fixmem:metrics:pipeline           hash     jobs_enqueued, events_enqueued, reclaimed, trimmed_*, …
    fixmem:metrics:gauges             hash     last_entry_timestamp_seconds
    fixmem:metrics:verdicts           hash     verdicts by ``source|outcome|result``
    fixmem:metrics:overturns          hash     verdicts that changed the agent's label, source|agent|verdict
    fixmem:metrics:verdicts_unlinked  hash     link verdicts not applied, by reason (workers.linker)
    fixmem:metrics:agents             hash     entries by ``harness|model|outcome`` (agent's label)
    fixmem:metrics:labels:<name>      set      the harness / model label values admitted (bounded; else other)
    fixmem:metrics:hist:<name>        hash     histogram: per-bucket counts ``in=<bound>``, ``sum``, ``count``
"""

from __future__ import annotations

import hashlib
from typing import Final

PREFIX: Final = "fixmem"

# Names that are settings: the defaults.
DEFAULT_STREAM: Final = f"{PREFIX}:turns"
DEFAULT_BACKFILL_STREAM: Final = f"{PREFIX}:turns:backfill"
DEFAULT_DEAD_STREAM: Final = f"{PREFIX}:dead"
DEFAULT_GROUP: Final = PREFIX
DEFAULT_LIVE_QUEUE: Final = f"{PREFIX}-live"
DEFAULT_BACKFILL_QUEUE: Final = f"{PREFIX}-backfill"

# The field of a stream entry that holds the event JSON.
EVENT_FIELD: Final = b"event"
# The field of a batch hash that names the stream its events came from (the others are stream ids, each
# with an empty value while its event waits in that stream, or the raw event once copied: ``ingest.trim``).
BATCH_STREAM_FIELD: Final = b"stream"
# The field of a batch hash that cuts its stream ids into runs adjacent in the stream (JSON list of
# ``[first, last, count]``): the worker reads each run with one ``XRANGE``.
BATCH_RUNS_FIELD: Final = b"runs"
# The field where a job's first attempt saves which of its entry ids the logs already held (JSON list).
BATCH_PRESENT_FIELD: Final = b"present"
# The field where a job's first attempt registers its entry ids in ``COUNT_INFLIGHT`` (JSON list).
BATCH_IDS_FIELD: Final = b"ids"

# Exact counting across batches (workers.jobs): entry id -> how many unfinished batches hold it, and
# entry id -> the batch that counted it as recorded. A field lives only while a batch holding the id is
# unfinished.
COUNT_INFLIGHT: Final = f"{PREFIX}:count:inflight"
COUNT_OWNER: Final = f"{PREFIX}:count:owner"

# Verdicts (workers.verdicts): held until their turn's entry exists; ids rotation dropped, for the window.
VERDICTS_HELD: Final = f"{PREFIX}:verdicts:held"
VERDICTS_DUE: Final = f"{PREFIX}:verdicts:due"
VERDICTS_GONE: Final = f"{PREFIX}:verdicts:gone"

# Fleet counters (hashes; see the module docstring).
METRICS_EVENTS: Final = f"{PREFIX}:metrics:events"
METRICS_ENTRIES: Final = f"{PREFIX}:metrics:entries"
METRICS_ROTATION_DROPPED: Final = f"{PREFIX}:metrics:rotation_dropped"
METRICS_DEAD_LETTERS: Final = f"{PREFIX}:metrics:dead_letters"
METRICS_PIPELINE: Final = f"{PREFIX}:metrics:pipeline"
METRICS_GAUGES: Final = f"{PREFIX}:metrics:gauges"
METRICS_VERDICTS: Final = f"{PREFIX}:metrics:verdicts"
METRICS_OVERTURNS: Final = f"{PREFIX}:metrics:overturns"
METRICS_AGENTS: Final = f"{PREFIX}:metrics:agents"
METRICS_VERDICTS_UNLINKED: Final = f"{PREFIX}:metrics:verdicts_unlinked"
LABELS_HARNESS: Final = f"{PREFIX}:metrics:labels:harness"
LABELS_MODEL: Final = f"{PREFIX}:metrics:labels:model"
HIST_EVENT_TO_ENTRY: Final = f"{PREFIX}:metrics:hist:event_to_entry_seconds"
HIST_BATCH_DURATION: Final = f"{PREFIX}:metrics:hist:batch_duration_seconds"

ALL_METRICS: Final = (
    METRICS_EVENTS,
    METRICS_ENTRIES,
    METRICS_ROTATION_DROPPED,
    METRICS_DEAD_LETTERS,
    METRICS_PIPELINE,
    METRICS_GAUGES,
    METRICS_VERDICTS,
    METRICS_OVERTURNS,
    METRICS_AGENTS,
    METRICS_VERDICTS_UNLINKED,
    HIST_EVENT_TO_ENTRY,
    HIST_BATCH_DURATION,
)


def batch(job_id: str) -> str:
    """The hash naming one job's events (stream id -> "" while the event waits in its stream, or it)."""
    return f"{PREFIX}:batch:{job_id}"


def held(stream: str) -> str:
    """The jobs holding ids of ``stream`` (zset: job id -> ms part of its oldest id); ``ingest.trim`` keeps
    every id at or after the oldest."""
    return f"{PREFIX}:held:{stream}"


def project_lock(owner: str, project_key: str) -> str:
    """The lease-lock key of one project; a digest keeps hostile names out of the key space."""
    material = "\x00".join((owner, project_key)).encode("utf-8", "surrogatepass")
    return f"{PREFIX}:lock:project:{hashlib.sha256(material).hexdigest()[:32]}"


def workspaces(owner: str) -> str:
    """One owner's workspace -> project key hash (``ingest.workspaces``); a digest of the owner names it."""
    return f"{PREFIX}:workspaces:{hashlib.sha256(owner.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


def backfill_checkpoint(run_key: str) -> str:
    """The checkpoint of one backfill run (``run_key``: a digest of its paths and options)."""
    return f"{PREFIX}:backfill:{run_key}"


def reaper_seen(job_id: str) -> str:
    """When the reaper first saw ``job_id`` dequeued but not started (unix seconds)."""
    return f"{PREFIX}:reaper:seen:{job_id}"


def reaper_abandoned(job_id: str) -> str:
    """How many times the worker running ``job_id`` died (counter with an expiry)."""
    return f"{PREFIX}:reaper:abandoned:{job_id}"


def git_scan(owner: str, project_key: str) -> str:
    """The ``scan-git`` cursor of one owner's repository (``ingest.verdicts.scan``); a digest names it."""
    material = "\x00".join((owner, project_key)).encode("utf-8", "surrogatepass")
    return f"{PREFIX}:verdicts:git:{hashlib.sha256(material).hexdigest()[:32]}"
