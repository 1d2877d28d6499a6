"""The pure extraction core: a turn event in, a fix entry (or a reason for none) out.

Modules, in the order data flows through them: ``limits`` (scan bounds), ``tools`` (tool families),
``calls`` (each tool event classified once per turn, read by files, errors, outcome and changes),
``shell`` / ``shell_writes`` (command lines and the files they write), ``diffs`` (unified diffs, patch
envelopes), ``paths`` (workspace-relative paths), ``files`` (files touched + symbols), ``symbols``,
``errors`` (signatures, ``normalize_error``), ``testruns`` (runners, summaries), ``outcome``, ``solution``
(solution line, tags) and ``turn`` (``extract``: the orchestration).
"""

from __future__ import annotations

from store.errorsig import normalize_error
from workers.extraction import turn
from workers.extraction.limits import Limits
from workers.extraction.turn import EXTRACTOR_VERSION, Extracted, SkipReason, extract

__all__ = ["EXTRACTOR_VERSION", "Extracted", "Limits", "SkipReason", "compiled", "extract", "normalize_error"]


def compiled() -> bool:
    """Whether the core runs as C extensions (a wheel build, ``setup.py``), not Python."""
    return not str(turn.__file__).endswith(".py")
