"""Old path of the Python harness adapter (``from fixmem.harness import Harness``, as harnesses written
before fixmem/ was split by surface import it): the adapter lives in ``fixmem.hooks.harness``."""

from __future__ import annotations

from fixmem.hooks.harness import Harness

__all__ = ["Harness"]
