"""Old path of the plain-RQ worker class (``rq worker -w fixmem.rq_worker.Worker``, as deployments written
before fixmem/ was split by surface name it): the class lives in ``fixmem.runtime.rq_worker``."""

from __future__ import annotations

from fixmem.runtime.rq_worker import Worker

__all__ = ["Worker"]
