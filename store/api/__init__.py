"""``FixStore``: the store's public face. Thin I/O around the pure cores (one project = one log file).

Every write of a project happens under flock on the sibling ``.lock`` file, taken inside the pluggable
lock ``lock_factory(owner, project_key)`` when there is one (the pipeline's Redis lease lock, for hosts
sharing a network volume), and starts by re-validating the cached parse against the file. The flock is
always taken, so a local writer without the factory (``FixMemory``, a CLI run) still excludes the others.
Readers take no lock and change nothing but a derived file found missing or stale (the index, the
summary). Parsed logs and their derived views are cached per file, keyed by the file's identity (see
``store.persist.fixlog``), so a warm recall parses and tokenizes nothing.

``FixStore`` is put together from one part per concern, each a module here:

- ``core``: settings, the parse cache, project files, the write lock (``StoreCore``);
- ``reading``: ``read``, ``recall``, ``lineage``;
- ``summaries``: ``stats``, ``project_stats``, ``has_project``, ``projects``, ``summary``, ``summaries``
  and the summary file every write keeps;
- ``appending``: ``append`` (dedup, redaction, reconciling, rotation with slack);
- ``rewrites``: ``apply_verdicts``, ``forget``, ``repair``;
- ``sessions``: the agent sessions that made no entry, for impact (``record_sessions``, ``sessions``).
"""

from __future__ import annotations

from store.api.appending import Appending, AppendResult
from store.api.core import CACHE_PROJECTS, DEFAULT_CACHE_BYTES, LockFactory
from store.api.reading import Reading, ReadResult
from store.api.rewrites import Judged, Rewrites
from store.api.sessions import Sessions

__all__ = [
    "CACHE_PROJECTS",
    "DEFAULT_CACHE_BYTES",
    "AppendResult",
    "FixStore",
    "Judged",
    "LockFactory",
    "ReadResult",
]


class FixStore(Reading, Appending, Rewrites, Sessions):
    """Per-project JSONL fix logs under ``<data_dir>/fix_memory/`` (see ``store.paths`` for the layout)."""
