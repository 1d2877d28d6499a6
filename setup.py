"""The native build: a wheel carries the extraction core compiled with mypyc; an editable install stays pure.

Everything else about the package is in ``pyproject.toml``. Which build compiles:

- a wheel (``pip install .``, ``pip wheel .``, ``python -m build``): the modules of ``workers/extraction``
  (pure, fully typed: mypy --strict passes on them) are compiled to C extensions by default; the ``.py``
  files ship beside them and Python imports the compiled ones. ``FIXMEM_COMPILE=0`` builds a pure wheel
  (for a machine with no C compiler or Python headers);
- an editable install (``pip install -e .``, what development and CI use): never compiled, whatever the
  variable says — a compiled module would shadow its ``.py``, so edits would not take effect until a
  rebuild, and the call-count budget (``bench/budget.py``) counts the pure core;
- ``FIXMEM_COMPILE=1`` with ``python setup.py build_ext --inplace``: compiled in place (the test's way).

The build needs mypy (for mypyc; ``pyproject.toml``'s build requirements bring it), a C compiler and
Python's headers. What the compiled core saves is measured in docs/decisions/0046-compiled-extraction-core.md.
``tests/workers/test_compiled_build.py`` builds it and checks the compiled core gives byte-identical
entries to the pure one, and that a wheel build compiles while an editable one does not.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup

# The modules compiled: the extraction core, not its package ``__init__`` (it only re-exports).
COMPILED = sorted(str(path) for path in Path("workers/extraction").glob("*.py") if path.name != "__init__.py")


def compiles(argv: list[str], env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether this build compiles the extraction core (see the module docstring)."""
    choice = env.get("FIXMEM_COMPILE", "")
    if "editable_wheel" in argv or choice == "0":
        return False
    return choice == "1" or "bdist_wheel" in argv


def _ext_modules() -> list[object]:
    if not compiles(sys.argv, os.environ):
        return []
    from mypyc.build import mypycify  # noqa: PLC0415 - only the native build needs mypy

    return list(mypycify(COMPILED, opt_level="3"))


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import ``compiles``
    setup(ext_modules=_ext_modules())
