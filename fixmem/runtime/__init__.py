"""The process side: what ``fixmem up`` runs and supervises, and what plain RQ and Prometheus load.

- ``up``: the embedded Redis (``redis_server``), the consumer and workers (``python -m
  fixmem.cli.children``) and the HTTP API (``api_child``) under one ``supervisor``; ``demo``: ``up --demo``
- ``rq_worker``: the worker class for ``rq worker -w fixmem.runtime.rq_worker.Worker``
- ``metrics``: the Prometheus families (fleet counters read from Redis, the API process's own)
- ``logs``: one line per record on stderr, tagged with the process's role

It imports no surface (``fixmem.cli``, ``api``, ``ui``, ``hooks``, ``mcp``): the surfaces start it.
"""
