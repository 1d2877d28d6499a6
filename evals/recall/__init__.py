"""The recall-quality evaluation: a labelled dataset (``projects/``, ``queries/``), its metrics and runner.

``DATASET`` is the directory of the labelled data shipped with the package (see ``evals/README.md``).
"""

from __future__ import annotations

from pathlib import Path

DATASET = Path(__file__).resolve().parent
