"""When no Redis answers, the error says what was tried (the URL and where it came from, the data
directory) and what failed, instead of "no `fixmem up` is running, start it" while one runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixmem.cli import main
from fixmem.errors import ExitCode
from fixmem.runtime.redis_server import free_port


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A user whose default data dir is ``tmp_path/xdg/fixmem``; no FIXMEM_* set."""
    for name in ("FIXMEM_REDIS_URL", "FIXMEM_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("FIXMEM_REDIS_TIMEOUT_SECONDS", "0.5")
    return tmp_path / "xdg" / "fixmem"


def _publish(data_dir: Path, url: str) -> Path:
    """What a running ``fixmem up`` writes: its Redis URL under its data dir."""
    (data_dir / "redis").mkdir(parents=True)
    (data_dir / "redis" / "url").write_text(url + "\n")
    return data_dir / "redis" / "url"


def test_a_configured_url_that_is_down_is_named_as_the_setting_not_a_missing_up(
    home: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed on the old code: "… Start the pipeline with `fixmem up`" while one ran (its URL published)."""
    _publish(home, redis_url)  # an `up` runs, with a live Redis
    down = f"redis://127.0.0.1:{free_port()}/0"
    monkeypatch.setenv("FIXMEM_REDIS_URL", down)
    assert main(["status"]) == ExitCode.REDIS_UNAVAILABLE
    err = capsys.readouterr().err.strip()
    assert f"cannot reach Redis at {down} (FIXMEM_REDIS_URL / --redis-url)" in err
    assert "unset FIXMEM_REDIS_URL to use the Redis of a running `fixmem up`" in err
    assert "Start the pipeline" not in err and err.count("\n") == 0


def test_a_stale_url_file_names_the_file_and_the_data_dir(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed on the old code: the message named neither the file nor the data dir."""
    down = f"redis://127.0.0.1:{free_port()}/0"
    url_file = _publish(home, down)
    assert main(["status"]) == ExitCode.REDIS_UNAVAILABLE
    err = capsys.readouterr().err
    assert (
        f"cannot reach Redis at {down} (read from {url_file}, written by the `fixmem up` of data dir {home})"
        in err
    )
    assert "has stopped or its Redis crashed: start `fixmem up` again" in err


def test_another_data_dir_is_named_with_the_up_that_runs_elsewhere(
    home: Path,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Failed on the old code: "no `fixmem up` is running" while one ran with the default data dir."""
    _publish(home, redis_url)
    assert main(["status"]) == 0  # the default data dir finds the running up
    capsys.readouterr()
    other = tmp_path / "other"
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(other))
    assert main(["status"]) == ExitCode.REDIS_UNAVAILABLE
    err = capsys.readouterr().err
    assert f"no `fixmem up` has published a Redis for data dir {other} (no {other / 'redis' / 'url'})" in err
    assert f"a `fixmem up` published {redis_url} for data dir {home}: use that data dir" in err
