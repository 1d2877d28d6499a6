"""Optional native build: ``FIXMEM_COMPILE=1`` compiles the extraction core with mypyc.

Everything else about the package is in ``pyproject.toml``; without the variable this file adds nothing
and the package is pure Python (the default, and what an editable install gets: a compiled module would
shadow its ``.py``, so edits would not take effect until a rebuild).

With it, the modules of ``workers/extraction`` (pure, fully typed: mypy --strict passes on them) are
compiled to C extensions; the ``.py`` files ship beside them and Python imports the compiled ones. The
extraction's instructions per turn fall by about a quarter, the worker's CPU per event by about a sixth
(docs/decisions/0046-compiled-extraction-core.md).
Build (mypy provides mypyc; a C compiler and Python's headers are needed)::

    pip install 'mypy>=1.10' 'setuptools>=77' wheel
    FIXMEM_COMPILE=1 pip install --no-build-isolation .

``tests/workers/test_compiled_build.py`` builds it and checks the compiled core gives byte-identical
entries to the pure one.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup

# The modules compiled: the extraction core, not its package ``__init__`` (it only re-exports).
COMPILED = sorted(str(path) for path in Path("workers/extraction").glob("*.py") if path.name != "__init__.py")


def _ext_modules() -> list[object]:
    if os.environ.get("FIXMEM_COMPILE") != "1":
        return []
    from mypyc.build import mypycify  # noqa: PLC0415 - only the native build needs mypy

    return list(mypycify(COMPILED, opt_level="3"))


setup(ext_modules=_ext_modules())
