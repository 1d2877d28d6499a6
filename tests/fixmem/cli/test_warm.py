"""``fixmem.cli.warm``: a forwarded command runs in the caller's environment and directory, and the
daemon's own are restored afterwards, whatever happened (the end-to-end comparison with the local path is
``tests/fixmem/test_console.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixmem import wiring
from fixmem.cli import warm
from fixmem.settings import Settings
from tests.configs import fix_store
from tests.store.factories import make_entry


@pytest.fixture(autouse=True)
def _no_kept_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """``run`` keeps reading stores for the rest of the process: not beyond this test."""
    monkeypatch.setattr(wiring, "_kept_readers", None)


def caller_env(data_dir: Path) -> dict[str, str]:
    return {"HOME": str(data_dir.parent), "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_OWNER": "carol"}


def test_a_command_runs_in_the_callers_environment_and_directory(data_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fix_store(data_dir).append("carol", str(workspace), [make_entry(1, "a fix", project=str(workspace))])
    environ, cwd = dict(os.environ), os.getcwd()
    code, out, err = warm.run(["stats", "--json"], caller_env(data_dir), str(workspace), "fixmem")
    assert (code, err) == (0, "") and '"total": 1' in out  # carol's project of the caller's directory
    assert (dict(os.environ), os.getcwd()) == (environ, cwd)
    store = wiring.make_store(Settings.from_env(caller_env(data_dir)), None)
    assert store is wiring.make_store(Settings.from_env(caller_env(data_dir)), None)  # kept warm


@pytest.mark.parametrize(
    ("argv", "env", "cwd", "error"),
    [
        (["schema"], {}, ".", ValueError),  # not a forwarded command
        (["projects"], {"A=B": "1"}, ".", ValueError),  # a name the environment cannot hold
        (["projects"], {}, "/nonexistent/dir", OSError),
    ],
)
def test_a_refused_request_leaves_the_daemon_as_it_was(
    tmp_path: Path, argv: list[str], env: dict[str, str], cwd: str, error: type[Exception]
) -> None:
    environ, here = dict(os.environ), os.getcwd()
    with pytest.raises(error):
        warm.run(argv, {"HOME": str(tmp_path), **env}, cwd, "fixmem")
    assert (dict(os.environ), os.getcwd()) == (environ, here)


def test_a_usage_error_is_an_answer_with_the_callers_program_name(tmp_path: Path) -> None:
    code, out, err = warm.run(["recall", "-k", "0", "q"], {"HOME": str(tmp_path)}, ".", "python -m fixmem")
    assert (code, out) == (2, "") and "Usage: python -m fixmem recall [OPTIONS] QUERY" in err
