"""The optional native build (``FIXMEM_COMPILE=1``, ``setup.py``): it compiles, and the compiled extraction
core gives the same entries, byte for byte, as the pure one on real agent logs and generated turns."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "agent-logs"

# Prints one line per turn: the entry's JSON (or the skip reason), and first whether the core is compiled.
_EXTRACT_ALL = """
import sys
from pathlib import Path
from bench.events import make_events
from ingest.importers import import_file, iter_files
from ingest.schema import parse_event
from workers.extraction import compiled, extract
print("compiled" if compiled() else "pure")
events = [event for path in iter_files([Path(sys.argv[1])]) for event in import_file(path, owner="t").events]
events += [parse_event(raw) for raw in make_events(200, projects=5)]
for event in events:
    got = extract(event)
    print(got.entry.model_dump_json() if got.entry is not None else f"skip {got.skip}")
"""


def _missing_toolchain() -> str | None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "no C compiler (cc/gcc)"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "no Python.h (the Python headers)"
    try:
        import mypyc.build  # noqa: F401, PLC0415
    except ImportError:
        return "no mypyc (pip install mypy)"
    return None


def _extract_all(tree: Path) -> list[str]:
    """Every turn's entry, extracted with ``tree``'s packages first on the path (the repo's bench after)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", _EXTRACT_ALL, str(LOGS)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.slow
def test_the_compiled_core_builds_and_extracts_exactly_as_the_pure_one(tmp_path: Path) -> None:
    missing = _missing_toolchain()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the native build cannot be tested: {missing}")
        pytest.skip(f"the native build cannot be tested: {missing}")
    tree = tmp_path / "tree"
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    for package in ("workers", "store", "ingest"):
        shutil.copytree(ROOT / package, tree / package, ignore=skip)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    build = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tree, env={**os.environ, "FIXMEM_COMPILE": "1"}, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    built = sorted(p.name.split(".")[0] for p in (tree / "workers" / "extraction").glob("*.so"))
    assert "turn" in built and "calls" in built, built

    compiled = _extract_all(tree)
    pure = _extract_all(ROOT)
    assert (compiled[0], pure[0]) == ("compiled", "pure")
    compiled, pure = compiled[1:], pure[1:]
    assert len(compiled) == len(pure) > 200
    assert sum(line.startswith("{") for line in pure) > 100  # most turns make entries
    mismatched = [i for i, (a, b) in enumerate(zip(compiled, pure, strict=True)) if a != b]
    assert mismatched == [], f"{len(mismatched)} turns differ, first: {compiled[mismatched[0]]!r}"


def _setup_module() -> object:
    spec = importlib.util.spec_from_file_location("fixmem_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["setup.py", "bdist_wheel", "--dist-dir", "d"], {}, True),  # pip install . / pip wheel .
        (["setup.py", "bdist_wheel"], {"FIXMEM_COMPILE": "0"}, False),  # a pure wheel, asked for
        (["setup.py", "editable_wheel", "--dist-dir", "d"], {}, False),  # pip install -e .
        (["setup.py", "editable_wheel"], {"FIXMEM_COMPILE": "1"}, False),  # never: it would shadow the .py
        (["setup.py", "build_ext", "--inplace"], {"FIXMEM_COMPILE": "1"}, True),
        (["setup.py", "egg_info"], {}, False),  # pip's metadata step builds nothing
    ],
)
def test_a_wheel_compiles_by_default_and_an_editable_install_never(
    argv: list[str], env: dict[str, str], expected: bool
) -> None:
    assert _setup_module().compiles(argv, env) is expected  # type: ignore[attr-defined]


def test_this_checkout_runs_the_pure_core() -> None:
    """The suite runs on an editable install: the pure core, which the call-count budget needs."""
    from workers.extraction import compiled  # noqa: PLC0415

    assert not compiled()
