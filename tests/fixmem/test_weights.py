"""Files with weights on the surfaces that take files: the service, the Python API, the CLI, the MCP tool
(the HTTP API: tests/fixmem/api/test_weights.py). A weight of 1 is a known file, under 1 a guess."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fixmem import service
from fixmem.cli import main
from fixmem.mcp.tool import ToolArgsError, parse_args
from fixmem.memory import FixMemory
from fixmem.settings import Settings
from store import FixEntry, TestRun, entry_id
from store.localize import Localized
from tests.configs import fix_store

PROJECT = "github.com/acme/widgets"
NOW = 1_800_000_000.0


def one_fix() -> FixEntry:
    """The fix of ``parse_mod1`` in ``src/mod1.py`` (the HTTP API's tests use it too)."""
    return FixEntry(
        id=entry_id("alice", PROJECT, "ev-1"),
        ts=1_700_000_000.0,
        project=PROJECT,
        task="parse_mod1 should split on commas",
        files=["src/mod1.py"],
        symbols=["parse_mod1"],
        errors=[],
        tests=TestRun(command="pytest -q", ok=True),
        outcome="fixed",
        solution="split parse_mod1 input on commas",
        tags=["fixed"],
    )


@pytest.fixture
def seeded(data_dir: Path) -> Path:
    fix_store(data_dir).append("alice", PROJECT, [one_fix()])
    return data_dir


def test_the_service_splits_known_files_from_guesses() -> None:
    given = Localized("src/c.py", 0.9, "the task names `c`")
    question = service.Question("q", ["src/a.py", "src/b.py"], weights=[1.0, 0.4], localized=[given])
    assert service.weighed(question) == (
        ["src/a.py"],
        [given, Localized("src/b.py", 0.4, service.CLIENT_LOCALIZED)],
    )
    assert service.weighed(service.Question("q", ["src/a.py"])) == (["src/a.py"], None)  # text only
    assert service.weighed(service.Question("q", weights=[])) == ([], [])  # localized to nothing


@pytest.mark.parametrize(
    ("files", "weights", "said"),
    [
        (["a.py"], [0.0], "a weight is a number in (0, 1]"),
        (["a.py"], [1.01], "a weight is a number in (0, 1]"),
        (["a.py"], [math.nan], "a weight is a number in (0, 1]"),
        (["a.py"], [0.5, 0.5], "2 weights for 1 files"),
    ],
)
def test_bad_weights_are_refused_everywhere(
    seeded: Path, files: list[str], weights: list[float], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace("]", r"\]")):
        service.check_weights(files, weights)
    memory = FixMemory(settings=Settings.from_env({"FIXMEM_DATA_DIR": str(seeded)}), clock=lambda: NOW)
    with pytest.raises(ValueError, match="weight"):
        memory.recall("alice", PROJECT, "split on commas", files=files, weights=weights)
    if not math.isnan(weights[0]):
        with pytest.raises(ToolArgsError, match="weights"):
            parse_args({"query": "split on commas", "files": files, "weights": weights})
    argv = ["recall", "split on commas", "--owner", "alice", "--project", PROJECT, "--data-dir", str(seeded)]
    for path in files:
        argv += ["--file", path]
    for weight in weights:
        argv += ["--weight", str(weight)]
    assert main(argv) == 2  # click's usage error
    assert "weight" in capsys.readouterr().err.lower()


def test_a_weight_of_one_recalls_as_a_known_file(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = FixMemory(settings=Settings.from_env({"FIXMEM_DATA_DIR": str(seeded)}), clock=lambda: NOW)
    plain = memory.recall("alice", PROJECT, "split on commas", files=["src/mod1.py"])
    weighed = memory.recall("alice", PROJECT, "split on commas", files=["src/mod1.py"], weights=[1.0])
    assert [r.entry.id for r in weighed] == [r.entry.id for r in plain] and plain
    assert list(weighed[0].reasons.files) == ["src/mod1.py"]
    assert parse_args({"query": "x", "files": ["src/mod1.py"], "weights": [1]}).weights == [1.0]
    argv = ["recall", "split on commas", "--owner", "alice", "--project", PROJECT, "--data-dir", str(seeded)]
    assert main([*argv, "--file", "src/mod1.py", "--weight", "1"]) == 0
    assert "parse_mod1" in capsys.readouterr().out


def test_the_reason_given_with_a_guess_is_what_recall_says_on_every_surface(
    seeded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A client that localized the task itself says why, as over HTTP: the Python API, the CLI and the
    tool carry ``reasons`` to the recall reasons; without weights they are refused."""
    why = "the task names `parse_mod1`, defined here"
    memory = FixMemory(settings=Settings.from_env({"FIXMEM_DATA_DIR": str(seeded)}), clock=lambda: NOW)
    got = memory.recall(
        "alice", PROJECT, "split on commas", files=["src/mod1.py"], weights=[0.8], reasons=[why]
    )
    assert got and why in got[0].reasons.localized
    with pytest.raises(ValueError, match="reasons without weights"):
        memory.recall("alice", PROJECT, "split on commas", files=["src/mod1.py"], reasons=[why])
    args = parse_args({"query": "x", "files": ["src/mod1.py"], "weights": [0.8], "reasons": [why]})
    assert args.reasons == [why]
    with pytest.raises(ToolArgsError, match="reasons without weights"):
        parse_args({"query": "x", "files": ["src/mod1.py"], "reasons": [why]})
    argv = ["recall", "split on commas", "--owner", "alice", "--project", PROJECT, "--data-dir", str(seeded)]
    assert main([*argv, "--file", "src/mod1.py", "--weight", "0.8", "--reason", why, "--json"]) == 0
    assert why in capsys.readouterr().out
    assert main([*argv, "--file", "src/mod1.py", "--reason", why]) == 2
    assert "reasons without weights" in capsys.readouterr().err
