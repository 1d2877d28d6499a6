"""The paths that installed hooks, deployments and the README name keep working after fixmem/ was split
by surface: ``fixmem.cli:main`` (the console script), ``fixmem.rq_worker.Worker`` (deploy/),
``python -m fixmem.hooks.publisher`` and ``…daemon`` (what the hooks start), the hook script
``fixmem/hooks/__main__.py`` run by absolute path, and ``fixmem.tool`` (the README's integration)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import fixmem


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("fixmem.cli", "main"),
        ("fixmem.rq_worker", "Worker"),
        ("fixmem.hooks.publisher", "main"),
        ("fixmem.hooks.daemon", "main"),
        ("fixmem.hooks.__main__", "main"),
        ("fixmem.tool", "recall_fixes"),
        ("fixmem.tool", "ToolContext"),
    ],
)
def test_each_old_dotted_path_imports(module: str, name: str) -> None:
    assert callable(getattr(importlib.import_module(module), name))


@pytest.mark.parametrize("module", ["fixmem.hooks.publisher", "fixmem.hooks.daemon"])
def test_each_old_module_runs(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"python -m {module}" in done.stdout


def test_the_installed_hook_script_runs_by_its_path() -> None:
    script = Path(fixmem.__file__).parent / "hooks" / "__main__.py"
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
    text = (Path(fixmem.__file__).parent.parent / "pyproject.toml").read_text()
    assert 'fixmem = "fixmem.cli:main"' in text
    assert 'fixmem-hook = "fixmem.hooks.__main__:main"' in text
