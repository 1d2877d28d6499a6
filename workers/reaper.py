"""The reaper: gives back work whose worker died, within seconds instead of RQ's ten minutes.

RQ (3.x) finds abandoned jobs only when a worker's maintenance runs (every 10 minutes by default, under
a lock that a SIGKILLed worker keeps for 15 minutes) and only after the job's registry entry expires
(``job timeout + 60 s`` for a SimpleWorker). fixmem's worker instead keeps each running job's entry in
``rq:wip:<queue>`` alive with a short lease renewed by a heartbeat thread, and every worker runs this
reaper every few seconds:

1. **Abandoned**: an execution whose lease lapsed (the worker died, while running the job or just
   before starting it) is requeued at the front, without spending one of the job's error retries. A
   job abandoned more than ``max_abandons`` times (a batch that kills its worker) goes to the failed
   registry, batch intact.
2. **Stuck**: a job id left in ``<queue>:intermediate`` (dequeued, then the worker died before
   registering an execution) for more than ``stuck_seconds`` is requeued.
3. **Due retries**: jobs whose retry backoff elapsed move from ``rq:scheduled:<queue>`` back to the queue
   (RQ would need a separate scheduler process for this).

Each step claims its item with ``ZREM``/``LREM`` before acting, so reapers on many workers never requeue
the same job twice, and no lock is needed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis.client import Pipeline
from rq import Queue
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.job_lifecycle import record_job_failure
from rq.utils import parse_composite_key

from ingest import keys
from ingest.connection import reply_text

log = logging.getLogger("fixmem.workers.reaper")

SEEN_TTL = 3600  # seconds a "first seen stuck" mark lives
ABANDON_TTL = 7 * 86400  # seconds an abandonment count lives


@dataclass
class ReapResult:
    """What one pass over one queue did."""

    abandoned: int = 0  # requeued after their worker died
    failed: int = 0  # abandoned too often: moved to the failed registry
    stuck: int = 0  # requeued after sitting dequeued-but-not-started
    retries: int = 0  # due retries moved back to the queue

    def __bool__(self) -> bool:
        return bool(self.abandoned or self.failed or self.stuck or self.retries)


def requeue(job: Job, queue: Queue, *, at_front: bool, pipe: Pipeline) -> None:
    """Put ``job`` back on ``queue`` as queued (on ``pipe``)."""
    job.set_status(JobStatus.QUEUED, pipeline=pipe)
    queue.push_job_id(job.id, pipeline=pipe, at_front=at_front)


def reap_queue(queue: Queue, *, now: float, stuck_seconds: float, max_abandons: int) -> ReapResult:
    """One reaper pass over ``queue``; ``now`` in unix seconds. Raises RedisError if Redis fails."""
    result = ReapResult()
    _abandoned(queue, now, max_abandons, result)
    _stuck(queue, now, stuck_seconds, result)
    _due_retries(queue, now, result)
    if result:
        with queue.connection.pipeline(transaction=False) as pipe:
            for name, n in (
                ("jobs_abandoned", result.abandoned),
                ("jobs_failed_abandoned", result.failed),
                ("jobs_stuck", result.stuck),
                ("retries_enqueued", result.retries),
            ):
                if n:
                    pipe.hincrby(keys.METRICS_PIPELINE, name, n)
            pipe.execute()
    return result


def _abandoned(queue: Queue, now: float, max_abandons: int, result: ReapResult) -> None:
    conn = queue.connection
    wip = queue.started_job_registry.key
    expired = [reply_text(m) for m in conn.zrangebyscore(wip, 0, now)]
    if not expired:
        return
    alive = {parse_composite_key(reply_text(m))[0] for m in conn.zrangebyscore(wip, f"({now}", "+inf")}
    for member in expired:
        job_id, _ = parse_composite_key(member)
        if job_id in alive or not conn.zrem(wip, member):
            continue  # running elsewhere, or another reaper (or the worker itself) took it
        job = queue.fetch_job(job_id)
        if job is None:
            continue
        status = job.get_status(refresh=False)
        # The dead execution goes in every case, or RQ trips on its expired hash when the job next finishes.
        dead = Execution.from_composite_key(member, conn)
        # QUEUED here: its worker died between registering the execution and starting the job (the job
        # sits in the intermediate list, where the stuck check leaves registered jobs to us).
        if status not in (JobStatus.STARTED, JobStatus.QUEUED) or conn.lpos(queue.key, job_id) is not None:
            with conn.pipeline(transaction=True) as pipe:
                dead.delete(job=job, pipeline=pipe)
                pipe.execute()
            continue  # finished, failed or scheduled (a leftover entry), or already waiting in the queue
        count_key = keys.reaper_abandoned(job_id)
        times = int(conn.incr(count_key))
        conn.expire(count_key, ABANDON_TTL)
        with conn.pipeline(transaction=True) as pipe:
            dead.delete(job=job, pipeline=pipe)
            pipe.lrem(queue.intermediate_queue_key, 1, job_id)
            if times > max_abandons:
                reason = f"abandoned {times} times: its worker died each time it ran (a poison batch?)"
                record_job_failure(job, reason, pipe)
                result.failed += 1
                log.error("job %s %s: moved to the failed registry", job_id, reason)
            else:
                requeue(job, queue, at_front=True, pipe=pipe)
                result.abandoned += 1
                log.warning(
                    "job %s lost its worker (lease lapsed): requeued (%d/%d)", job_id, times, max_abandons
                )
            pipe.execute()


def _stuck(queue: Queue, now: float, stuck_seconds: float, result: ReapResult) -> None:
    conn = queue.connection
    intermediate = queue.intermediate_queue_key
    waiting = [reply_text(i) for i in conn.lrange(intermediate, 0, -1)]
    if not waiting:
        return
    wip = queue.started_job_registry.key
    running = {parse_composite_key(reply_text(m))[0] for m in conn.zrange(wip, 0, -1)}
    for job_id in waiting:
        if job_id in running:
            continue  # a worker registered it: its lease decides (``_abandoned``), not this check
        seen_key = keys.reaper_seen(job_id)
        conn.set(seen_key, repr(now), nx=True, ex=SEEN_TTL)
        first = conn.get(seen_key)
        if first is None or now - float(first) < stuck_seconds:
            continue
        if not conn.lrem(intermediate, 1, job_id):
            continue
        conn.delete(seen_key)
        job = queue.fetch_job(job_id)
        if job is None:
            continue
        with conn.pipeline(transaction=True) as pipe:
            requeue(job, queue, at_front=True, pipe=pipe)
            pipe.execute()
        result.stuck += 1
        log.warning("job %s was dequeued but never started (worker died?): requeued", job_id)


def _due_retries(queue: Queue, now: float, result: ReapResult) -> None:
    conn = queue.connection
    scheduled = queue.scheduled_job_registry.key
    for job_id in (reply_text(i) for i in conn.zrangebyscore(scheduled, 0, now, start=0, num=100)):
        if not conn.zrem(scheduled, job_id):
            continue
        job = queue.fetch_job(job_id)
        if job is None:
            continue
        with conn.pipeline(transaction=True) as pipe:
            requeue(job, queue, at_front=False, pipe=pipe)
            pipe.execute()
        result.retries += 1
        log.info("job %s: retry backoff elapsed, requeued (%s retries left)", job_id, job.retries_left)
