"""A worker class for plain RQ:
``rq worker -w fixmem.runtime.rq_worker.Worker -u URL fixmem-live fixmem-backfill``.

It always uses the JSON serializer (a pickled job is refused whatever ``-S`` says), configures itself
from the ``FIXMEM_*`` settings (data directory, lock, leases) and installs the job context, so RQ's own
CLI runs fixmem's jobs as ``fixmem worker`` does (minus the reconnect loop: RQ's command exits when its
loop ends).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from rq import Queue
from rq.serializers import JSONSerializer

from fixmem import wiring
from fixmem.settings import Settings
from workers.jobs import install
from workers.worker import FixmemQueue, FixmemWorker


class Worker(FixmemWorker):
    """``FixmemWorker`` configured from the environment (for ``rq worker -w``)."""

    def __init__(self, queues: Sequence[Queue], *args: Any, **kwargs: Any) -> None:
        settings = Settings.from_env()
        connection: redis.Redis = kwargs["connection"]
        kwargs["serializer"] = JSONSerializer
        names = [q.name if isinstance(q, Queue) else str(q) for q in queues]
        super().__init__(
            [FixmemQueue(name, connection=connection, serializer=JSONSerializer) for name in names],
            *args,
            options=wiring.worker_options(settings),
            **kwargs,
        )
        install(wiring.worker_context(settings, connection, name=self.name))
