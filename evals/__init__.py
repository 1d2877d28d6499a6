"""The evaluations: how good recall (``evals.recall``) and extraction (``evals.extraction``) are.

Each one is an importable package with its data beside it, run by ``fixmem eval`` and ``fixmem
eval-extraction`` (``fixmem.cli.eval`` and ``fixmem.cli.eval_extraction``, thin adapters) and by its tests.
It imports the pipeline's packages (``store``, ``workers``, ``ingest``); none of them imports it, nor
does it import ``fixmem`` or ``tests`` (import-linter contracts in ``pyproject.toml``).
"""
