"""Guard rails: the import contracts, lint and types hold for the whole tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return path


def test_import_contracts_hold() -> None:
    result = _run(_tool("lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_clean() -> None:
    result = _run(_tool("ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _run(_tool("ruff"), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def import_cycles(package: str) -> list[list[str]]:
    """The import cycles among ``package``'s modules (strongly connected components of more than one
    module, each as one cycle through them), imports inside functions included: a lazy import still
    ties the two modules together."""
    import grimp  # noqa: PLC0415 - import-linter's graph builder, a test dependency

    graph = grimp.build_graph(package, cache_dir=None)
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in edges[module]:
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            component = []
            while (top := stack.pop()) != module:
                component.append(top)
            if component:
                cycles.append(_one_cycle(sorted([module, *component]), edges))

    for module in modules:
        if module not in order:
            visit(module)
    return cycles


def _one_cycle(component: list[str], edges: dict[str, list[str]]) -> list[str]:
    """A shortest cycle through the first module of ``component`` (a breadth-first search back to it)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for other in edges[module]:
                if other == start:
                    return [*paths[module], start]
                if other in members and other not in paths:
                    paths[other] = [*paths[module], other]
                    following.append(other)
        frontier = following
    return component  # unreachable: a strongly connected component has a cycle through each member


@pytest.mark.parametrize("package", ["fixmem", "ingest", "workers", "store"])
def test_no_import_cycles(package: str) -> None:
    cycles = import_cycles(package)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)
