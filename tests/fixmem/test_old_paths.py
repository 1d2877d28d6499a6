"""The paths that installed hooks, deployments and the docs name keep working after fixmem/ was split by
surface. Each old dotted path is either still the real module or a shim at that path; ``SHIMS`` says
which outside thing names each shim (keep that list short: a shim is kept only for a name written down
outside this repository's code)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import fixmem

FIXMEM = Path(fixmem.__file__).parent
MAX_TOP_LEVEL_MODULES = 12  # issue 28: "fixmem/ holds at most 12 top-level modules and the surface packages"
PACKAGES = {"cli", "api", "ui", "hooks", "mcp", "runtime"}  # the five surfaces and the process side

# old dotted path -> (where it lives now, who outside names the old path)
SHIMS = {
    "fixmem.rq_worker": (
        "fixmem.runtime.rq_worker",
        "deployments running plain RQ: `rq worker -w fixmem.rq_worker.Worker` (docs/operations.md until #28)",
    ),
    "fixmem.tool": (
        "fixmem.mcp.tool",
        "harness code: `from fixmem.tool import recall_fixes` (docs/integrations.md until #28)",
    ),
    "fixmem.harness": ("fixmem.hooks.harness", "harness code: `from fixmem.harness import Harness` (README)"),
    "fixmem.pipeline_main": (
        "fixmem.cli.children",
        "scripts and older bench refs: `python -m fixmem.pipeline_main ingest|worker` (docs/reliability.md)",
    ),
}


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("fixmem.cli", "main"),  # what pyproject's console script runs (fixmem.__main__.main)
        ("fixmem.__main__", "main"),  # pyproject's console script
        ("fixmem.rq_worker", "Worker"),
        ("fixmem.hooks.publisher", "main"),  # what the installed hooks start
        ("fixmem.hooks.daemon", "main"),
        ("fixmem.hooks.__main__", "main"),  # the installed hook script
        ("fixmem.tool", "recall_fixes"),
        ("fixmem.tool", "ToolContext"),
        ("fixmem.harness", "Harness"),
    ],
)
def test_each_old_dotted_path_imports(module: str, name: str) -> None:
    assert callable(getattr(importlib.import_module(module), name))


@pytest.mark.parametrize(("old", "new"), [(old, new) for old, (new, _) in SHIMS.items()])
def test_each_shim_re_exports_the_module_it_moved_to(old: str, new: str) -> None:
    shim, real = importlib.import_module(old), importlib.import_module(new)
    assert shim.__all__
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(real, name), name


@pytest.mark.parametrize("module", ["fixmem.hooks.publisher", "fixmem.hooks.daemon"])
def test_each_old_module_runs(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"python -m {module}" in done.stdout


def test_the_old_pipeline_child_command_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fixmem.pipeline_main", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--burst" in done.stdout


def test_the_installed_hook_script_runs_by_its_path() -> None:
    script = FIXMEM / "hooks" / "__main__.py"
    done = subprocess.run(
        [sys.executable, "-S", str(script), "no-such-harness"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert "usage: fixmem-hook claude-code" in done.stderr


def test_the_console_script_names_the_cli() -> None:
    text = (FIXMEM.parent / "pyproject.toml").read_text()
    assert 'fixmem = "fixmem.__main__:main"' in text  # which runs fixmem.cli:main but for the fast path
    assert 'fixmem-hook = "fixmem.hooks.__main__:main"' in text


def _top_level_modules() -> set[str]:
    return {p.stem for p in FIXMEM.glob("*.py")} - {"__init__", "__main__"}


def test_fixmem_holds_at_most_twelve_modules_and_its_packages() -> None:
    modules = _top_level_modules()
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, sorted(modules)
    packages = {p.parent.name for p in FIXMEM.glob("*/__init__.py")}
    assert packages == PACKAGES


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_a_shim_only_imports_and_re_exports(old: str) -> None:
    """A shim holds no code of its own: its docstring, imports, ``__all__`` and a ``__main__`` guard."""
    tree = ast.parse((FIXMEM / f"{old.removeprefix('fixmem.')}.py").read_text())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Import", "Assign", "If"}, kinds
    assert [n for n in tree.body if isinstance(n, ast.If)] in ([], [tree.body[-1]])
