"""Backfill: replay old agent logs into the backfill stream, behind live traffic, resumably.

One module per job, in the order a run uses them (``records``, ``plan``, ``rate`` and ``report`` are pure,
no clock, no Redis — an import-linter contract keeps Redis and RQ out):

- ``records``: the values — a ``FileRecord`` per walked file (also its checkpoint entry), ``RunResult``,
  ``Drain`` (where the events are in the pipeline), ``BackfillError``.
- ``plan``: pure — ``--since``, the run key, what one imported file contributes.
- ``config``: ``RunConfig``, one run's options (fixmem builds it from its settings).
- ``parse_pool``: import and plan the files in walk order, in this process or a pool of parse processes.
- ``rate``: pure — the token bucket of ``--rate``.
- ``checkpoint``: the checkpoint hash and the Lua script that publishes a file's events with its field.
- ``publisher``: publish within the rate and the backlog bound.
- ``run``: ``run_backfill`` ties them together; ``walk``; ``stop_on_signals``.
- ``follow``: where the published events are in the pipeline, until they settle.
- ``report``: pure — the report (JSON and text) and its verdict; ``progress``: the terminal display.
"""
