"""Old path of the pipeline's child processes (``python -m fixmem.pipeline_main ingest|worker``, as
scripts and older ``fixmem up``/bench refs start them): the commands live in ``fixmem.cli.children``."""

from __future__ import annotations

import sys

from fixmem.cli.children import child
from fixmem.errors import run_group

__all__ = ["child"]

if __name__ == "__main__":
    sys.exit(run_group(child))
