"""The worker process (``fixmem worker``): an RQ SimpleWorker (no fork per job) that loses no work.

What it changes in RQ 3.x, and why:

- **No fork per job** (``SimpleWorker``): a fork costs milliseconds per job (see ``bench/``).
- **Leases**: a running job's execution (its entry in ``rq:wip:<queue>``, its hash and its place in the
  job's execution registry) expires ``job_lease_seconds`` after its last heartbeat, and a thread renews
  it with RQ's own ``Execution.heartbeat`` every ``heartbeat_seconds`` while the job runs. A SIGKILLed worker
  stops renewing; the reaper (``workers.reaper``, run by every worker every ``reap_interval_seconds``)
  requeues its job. Pick-up time after a kill <= lease + reap interval (15 + 5 s by default).
- **Priority without losing jobs**: the queues are tried in order (live first) with ``LMOVE`` into each
  queue's intermediate list in one Lua call, then a short ``BLMOVE`` on the first; RQ's own multi-queue
  path uses ``BLPOP``, which leaves no trace of a job whose worker dies right after dequeuing it.
- **Maintenance**: the reaper replaces RQ's abandoned-job cleanup (10-minute interval, 15-minute lock);
  due retries are moved back by the reaper, so no scheduler process is needed.
- **Reconnects**: ``run_worker`` restarts the work loop after a Redis outage, with backoff, and logs it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import redis
from redis.client import Pipeline
from rq import Queue, SimpleWorker
from rq.exceptions import DequeueTimeout
from rq.executions import Execution
from rq.job import Job
from rq.registry import FailedJobRegistry, FinishedJobRegistry
from rq.serializers import JSONSerializer
from rq.utils import now as rq_now
from rq.utils import utcformat
from rq.worker import WorkerStatus

from ingest.backoff import Backoff
from ingest.connection import REDIS_DOWN, describe, reply_text, write_refusal
from workers.reaper import reap_queue

log = logging.getLogger("fixmem.workers.worker")

POLL_SECONDS = 1  # longest block on an empty queue between maintenance checks
HEARTBEAT_MIN_SECONDS = (
    1.0  # a worker's own heartbeat (its key's TTL is worker_ttl + 60 s) at most this often
)
PUBSUB_WAKE_SECONDS = 1.0  # longest wait of RQ's command-channel thread: bounds how long a stop waits for it

_DEQUEUE_IN_ORDER = """
for i = 1, #KEYS, 2 do
  local id = redis.call('LMOVE', KEYS[i], KEYS[i + 1], 'LEFT', 'RIGHT')
  if id then return {KEYS[i], id} end
end
return false
"""


class FixmemQueue(Queue):
    """An RQ queue whose multi-queue dequeue keeps priority order and always leaves a trace."""

    @classmethod
    def dequeue_any(  # type: ignore[override]  # noqa: PLR0917 - RQ's signature
        cls,
        queues: Sequence[Queue],
        timeout: int | None,
        connection: redis.Redis,
        job_class: type[Job] | None = None,
        serializer: Any = None,
        death_penalty_class: Any = None,
    ) -> tuple[Job, Queue] | None:
        """The next job of the first non-empty queue, moved to that queue's intermediate list.

        Blocks at most ``POLL_SECONDS`` on the first queue when all are empty (None: do not block).
        Raises DequeueTimeout when the block ends empty.
        """
        script = connection.register_script(_DEQUEUE_IN_ORDER)
        keys = [k for q in queues for k in (q.key, q.intermediate_queue_key)]
        while True:
            found = script(keys=keys)
            if found:
                queue_key, job_id = reply_text(found[0]), reply_text(found[1])
            elif timeout is None:
                return None
            else:
                first = queues[0]
                moved = connection.blmove(first.key, first.intermediate_queue_key, min(timeout, POLL_SECONDS))
                if moved is None:
                    raise DequeueTimeout(timeout, first.key)
                queue_key, job_id = first.key, reply_text(moved)
            fetched = cls._fetch_dequeued_job(
                connection, queue_key, job_id,
                job_class=job_class, serializer=serializer, death_penalty_class=death_penalty_class,
            )  # fmt: skip
            if fetched is not None:
                return fetched


class _LeaseKeeper:
    """The worker's one lease thread: while a job runs, renew its execution (RQ's heartbeat) and the
    worker's key every ``heartbeat_seconds``.

    One thread for the worker's life, not one per job (a thread started and joined per job is a measurable
    cost per job: docs/performance.md, "Figures behind comments in the code"). A renewal runs under
    ``_mutex``, which the job's end also takes, so no renewal lands after the job's execution was cleaned
    up.
    """

    def __init__(self, worker: FixmemWorker) -> None:
        self.worker = worker
        self._mutex = threading.Lock()
        self._current: tuple[Job, Execution] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def holding(self, job: Job, execution: Execution) -> Iterator[None]:
        """Renew ``execution``'s lease for the block."""
        with self._mutex:
            self._current = (job, execution)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name=f"lease {self.worker.name}", daemon=True
                )
                self._thread.start()
        try:
            yield
        finally:
            with self._mutex:
                self._current = None

    def stop(self) -> None:
        """End the thread (the worker is done)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        lease = self.worker.lease_seconds
        while not self._stop.wait(self.worker.heartbeat_seconds):
            with self._mutex:
                if self._current is None:
                    continue
                job, execution = self._current
                try:
                    with self.worker.connection.pipeline(transaction=True) as pipe:
                        execution.heartbeat(job.started_job_registry, lease, pipe)
                        pipe.hset(self.worker.key, "last_heartbeat", utcformat(rq_now()))  # alive: status
                        pipe.expire(self.worker.key, lease + 60)
                        pipe.execute()
                except redis.exceptions.RedisError as exc:  # the next beat may get through
                    log.warning("lease renewal of %s failed: %s", execution.composite_key, exc)


class FixmemWorker(SimpleWorker):
    """SimpleWorker with job leases, an ordered lossless dequeue and the fast reaper."""

    queue_class = FixmemQueue

    def __init__(
        self,
        queues: Sequence[Queue],
        *args: Any,
        options: WorkerOptions,
        **kwargs: Any,
    ) -> None:
        """RQ's SimpleWorker on ``queues``, with the leases and reaping of ``options`` (its ``queues`` and
        ``name`` are ``build_worker``'s)."""
        kwargs.setdefault("serializer", JSONSerializer)
        kwargs.setdefault("worker_ttl", 60)
        kwargs.setdefault("maintenance_interval", options.reap_interval_seconds)
        super().__init__(queues, *args, **kwargs)
        self.lease_seconds = options.job_lease_seconds
        self.heartbeat_seconds = options.heartbeat_seconds
        self.stuck_seconds = options.stuck_seconds
        self.max_abandons = options.max_abandons
        self._leases = _LeaseKeeper(self)
        self._beat_at = -HEARTBEAT_MIN_SECONDS  # monotonic time of the last heartbeat of our own

    stop_requested_by_signal = False

    def request_stop(self, signum: int, frame: Any) -> None:
        """SIGINT/SIGTERM: finish the current job, then stop (and tell ``run_worker`` not to restart)."""
        self.stop_requested_by_signal = True
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """A running job's lease, in seconds (renewed while it runs; see ``_Lease``)."""
        return self.lease_seconds

    def execute_job(self, job: Job, queue: Queue) -> None:
        """Run ``job`` in this process while the lease thread renews its lease."""
        execution = self.prepare_execution(job)
        with self._leases.holding(job, execution):
            self.perform_job(job, queue, execution)
        self.set_state(WorkerStatus.IDLE)

    def heartbeat(self, timeout: int | None = None, pipeline: Pipeline | None = None) -> None:
        """RQ's worker heartbeat, in one round trip and at most every ``HEARTBEAT_MIN_SECONDS``.

        RQ sends three commands one by one, three times per job; the worker's key lives
        ``worker_ttl`` + 60 s, so a beat a second keeps it as well. In someone's pipeline it always goes.
        """
        if pipeline is not None:
            super().heartbeat(timeout, pipeline)
            return
        if time.monotonic() - self._beat_at < HEARTBEAT_MIN_SECONDS:
            return
        with self.connection.pipeline(transaction=False) as pipe:
            super().heartbeat(timeout, pipe)
            pipe.execute()
        self._beat_at = time.monotonic()

    def set_state(self, state: str, pipeline: Pipeline | None = None) -> None:
        """RQ's, but without writing a state the worker already holds (RQ writes IDLE twice per job)."""
        if pipeline is None and state == getattr(self, "_state", None):
            return
        super().set_state(state, pipeline)

    def subscribe(self) -> None:
        """RQ's command channel (``rq.command``: shutdown, kill-horse, stop-job), its thread waking every
        ``PUBSUB_WAKE_SECONDS`` instead of RQ's 60.

        RQ's teardown unsubscribes, then stops the thread; redis-py 8's ``stop()`` joins it without a
        timeout. When the thread read the UNSUBSCRIBE reply and looped before the stop, it waits up to its
        ``sleep_time`` for a subscription that never comes, so a SIGTERMed worker took up to 60 s to exit
        (seen as a flaky crash-recovery test; tests/workers/test_worker.py has the race on purpose).
        """
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(  # type: ignore[assignment]  # RQ types it None
            sleep_time=PUBSUB_WAKE_SECONDS, daemon=True, exception_handler=self._pubsub_exception_handler
        )

    def teardown(self) -> None:
        """RQ's, and stop the lease thread."""
        self._leases.stop()
        super().teardown()  # type: ignore[no-untyped-call]

    def prepare_job_execution(self, job: Job, remove_from_intermediate_queue: bool = False) -> None:
        """As RQ's, but always take the job off its intermediate list (RQ skips it with several queues)."""
        super().prepare_job_execution(job, remove_from_intermediate_queue=True)

    def clean_registries(self) -> None:
        """The reaper on every queue, then RQ's expiry of finished and failed entries.

        Records when it ran, as RQ's own does: without ``last_cleaned_at`` RQ calls maintenance on every
        pass of its loop (twice per job: ~20 Redis round trips a job) instead of every interval.
        """
        now = time.time()
        for queue in self.queues:
            reap_queue(queue, now=now, stuck_seconds=self.stuck_seconds, max_abandons=self.max_abandons)
            for registry in (FinishedJobRegistry, FailedJobRegistry):
                registry(queue.name, connection=self.connection, serializer=self.serializer).cleanup()
        self.last_cleaned_at = rq_now()  # type: ignore[assignment]  # RQ annotates it as None


@dataclass(frozen=True)
class WorkerOptions:
    """How ``run_worker`` builds its workers; built from fixmem's settings (named alike; they hold the
    defaults) by ``fixmem.wiring.worker_options``."""

    queues: tuple[str, ...]
    job_lease_seconds: int
    heartbeat_seconds: float
    reap_interval_seconds: float
    stuck_seconds: float
    max_abandons: int
    name: str | None = None


def worker_name(role: str = "worker") -> str:
    """A unique worker name: host, role, pid and a random suffix (RQ refuses a live duplicate)."""
    return f"{socket.gethostname()}-{role}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def build_worker(client: redis.Redis, options: WorkerOptions) -> FixmemWorker:
    """A FixmemWorker on ``options.queues`` (in priority order)."""
    queues = [FixmemQueue(name, connection=client, serializer=JSONSerializer) for name in options.queues]
    return FixmemWorker(
        queues,
        connection=client,
        name=options.name or worker_name(),
        options=options,
    )


def run_worker(
    client: redis.Redis,
    options: WorkerOptions,
    *,
    burst: bool = False,
    max_jobs: int | None = None,
    stop: threading.Event | None = None,
    logging_level: str = "WARNING",
) -> int:
    """Work until stopped (SIGINT/SIGTERM: finish the current job), ``burst`` ends, or ``max_jobs`` ran.

    When the loop ends on a Redis error, wait for Redis with backoff (logged) and start again.
    ``logging_level`` is RQ's (its INFO logs four lines per job). Returns how many work loops ran (1 unless
    Redis went away).
    """
    stop = stop or threading.Event()
    backoff = Backoff()
    loops = 0
    while not stop.is_set():
        loops += 1
        if loops > 1 and options.name:  # the previous loop's registration may still be alive in Redis
            options = replace(options, name=f"{options.name.rsplit('~', 1)[0]}~{loops}")
        worker = build_worker(client, options)
        started = time.monotonic()
        try:
            worker.work(burst=burst, max_jobs=max_jobs, logging_level=logging_level)
        except REDIS_DOWN as exc:
            log.warning("worker %s lost redis at %s: %s", worker.name, describe(client), exc)
        except redis.exceptions.ResponseError as exc:
            refusal = write_refusal(exc)
            if refusal is None:
                raise
            log.warning("worker %s: redis at %s refuses writes: %s", worker.name, describe(client), refusal)
        if worker.stop_requested_by_signal or burst or max_jobs is not None:
            break
        if time.monotonic() - started > 60:
            backoff.reset()  # it ran well for a while: this is a new problem
        delay = backoff.next()  # RQ logged why its loop ended (Redis down, out of memory, …)
        log.warning("work loop of %s ended: restarting in %.1fs", worker.name, delay)
        if stop.wait(delay) or not _wait_for_redis(client, backoff, stop):
            break
    return loops


def _wait_for_redis(client: redis.Redis, backoff: Backoff, stop: threading.Event) -> bool:
    """Ping with backoff until Redis answers (True) or ``stop`` is set (False); logs each wait.

    Redis 6.2 answers PING with MISCONF while it cannot write its AOF: that is waited out too.
    """
    while not stop.is_set():
        try:
            client.ping()
        except REDIS_DOWN as exc:
            delay = backoff.next()
            log.warning("redis unreachable at %s (%s): retrying in %.1fs", describe(client), exc, delay)
            stop.wait(delay)
            continue
        except redis.exceptions.ResponseError as exc:
            refusal = write_refusal(exc)
            if refusal is None:
                raise
            delay = backoff.next()
            log.warning("redis at %s refuses writes: %s: retrying in %.1fs", describe(client), refusal, delay)
            stop.wait(delay)
            continue
        log.info("redis answers at %s again: restarting the work loop", describe(client))
        return True
    return False
