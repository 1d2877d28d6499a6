"""``fixmem eval``: JSON or a table; named exit codes for a bad dataset and for figures under the floors."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fixmem.cli import main
from fixmem.errors import ExitCode


def test_fixmem_eval_prints_json_for_one_half(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--json", "--split", "held_out"]) == 0
    printed = orjson.loads(capsys.readouterr().out)
    assert set(printed["splits"]) == {"held_out"}
    assert printed["overall"]["leaks"] == 0


def test_fixmem_eval_prints_a_table_and_names_a_bad_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval"]) == 0
    out = capsys.readouterr().out
    assert "overall" in out and "negative-generic" in out and "goals:" in out
    assert main(["eval", "--dataset", str(tmp_path)]) == ExitCode.DATA_ERROR
    assert "no *.toml files" in capsys.readouterr().err


def test_fixmem_eval_check_exits_below_floors_when_a_probe_is_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "projects").mkdir()
    (tmp_path / "queries").mkdir()
    (tmp_path / "projects" / "p.toml").write_text(
        '[project]\nowner = "o"\nkey = "p"\n\n[[entry]]\nlabel = "a"\ndays_ago = 1\n'
        'task = "login times out on slow networks"\noutcome = "fixed"\n'
    )
    (tmp_path / "queries" / "q.toml").write_text(  # a probe the store answers: abstention 0 < the floor
        '[[query]]\nid = "n1"\ncategory = "negative-generic"\nowner = "o"\nproject = "p"\n'
        'text = "login times out on slow networks"\n'
    )
    assert main(["eval", "--dataset", str(tmp_path)]) == ExitCode.OK  # without --check: figures only
    assert main(["eval", "--check", "--dataset", str(tmp_path)]) == ExitCode.BELOW_FLOORS
    assert "under the floors: abstention 0.0000 < 0.98" in capsys.readouterr().err
