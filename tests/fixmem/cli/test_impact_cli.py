"""``fixmem impact``: bad input is a clear usage error (exit 2), an unknown project exit 66, and with no
session recorded both arms show zero and the power line says how to start measuring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixmem.cli import main
from fixmem.cli.impact import parse_since
from fixmem.errors import CliError, ExitCode
from tests.configs import fix_store
from tests.store.factories import OWNER, make_entry

WIDGETS = "github.com/acme/widgets"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Path:
    fix_store(data_dir).append(OWNER, WIDGETS, [make_entry(1, project=WIDGETS)])
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_OWNER", OWNER)
    monkeypatch.delenv("FIXMEM_REDIS_URL", raising=False)
    return data_dir


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 30 * 86400), ("12h", 43200), ("90m", 5400), ("2w", 1209600), ("60", 60)]
)
def test_since_reads_durations(text: str, seconds: float) -> None:
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-3d", "0d", "3y"])
def test_a_bad_since_is_a_usage_error(text: str) -> None:
    with pytest.raises(CliError) as raised:
        parse_since(text)
    assert raised.value.code == ExitCode.USAGE and "--since" in str(raised.value)


def test_impact_without_sessions_and_of_an_unknown_project(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["impact", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["sessions"], got["arms"]["memory"]["sessions"], got["lift"]["outcome"]) == (0, 0, None)
    assert main(["impact"]) == 0
    assert "FIXMEM_HOLDBACK" in capsys.readouterr().out
    assert main(["impact", "--project", "github.com/acme/nope"]) == ExitCode.NOT_FOUND
    assert main(["impact", "--since", "soon"]) == ExitCode.USAGE
