"""``fixmem.hooks.harness``: local and remote give the same answers; fixmem down is invisible; after_turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.common import serving
from fixmem.hooks.harness import Harness
from fixmem.hooks.session import read_counters
from fixmem.runtime.redis_server import free_port
from tests.configs import fix_store
from tests.fixmem.hooks.conftest import OWNER, PROJECT

TOKEN = "harness-token-0123456789"


@pytest.fixture
def api(seeded: Path) -> Iterator[str]:
    with serving(seeded, f"{TOKEN}:{OWNER}") as base:
        yield base


def calls(harness: Harness) -> list[str]:
    return [
        harness.before_task("parse_csv drops quoted commas again in src/csv_io.py"),
        harness.on_file("src/csv_io.py"),
        harness.on_error("AssertionError: assert ['a', '\"b'] == ['a', 'b,c']"),
        harness.before_task("login times out after 30 seconds on the staging server"),
        harness.on_file("src/auth.py"),
    ]


def test_local_and_remote_answer_the_same(seeded: Path, api: str, tmp_path: Path) -> None:
    local_env = {"FIXMEM_DATA_DIR": str(seeded), "FIXMEM_OWNER": OWNER, "FIXMEM_PROJECT": PROJECT}
    remote_env = {**local_env, "FIXMEM_DATA_DIR": str(tmp_path / "client"), "FIXMEM_API_URL": api}
    remote_env["FIXMEM_API_TOKEN"] = TOKEN
    local = calls(Harness.from_env(local_env, workspace=str(tmp_path), session="s"))
    remote = calls(Harness.from_env(remote_env, workspace=str(tmp_path), session="s"))
    assert local == remote
    assert "parse_csv" in local[0] and "login" in local[3]
    assert local[1:3] == ["", ""]  # already injected in this session
    assert read_counters(tmp_path / "client" / "hooks") == {}


def test_fixmem_down_answers_nothing_and_counts(data_dir: Path, tmp_path: Path) -> None:
    env = {
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_OWNER": OWNER,
        "FIXMEM_PROJECT": PROJECT,
        "FIXMEM_API_URL": f"http://127.0.0.1:{free_port()}",
        "FIXMEM_API_TOKEN": TOKEN,
        "FIXMEM_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
    }
    harness = Harness.from_env(env, workspace=str(tmp_path))
    assert harness.before_task("anything at all") == ""
    assert harness.on_error("E boom") == ""
    turn = {"user_message": "fix it", "tool_events": [{"tool": "bash", "input": {"command": "ls"}}]}
    assert harness.after_turn(turn) is not None  # kept in the spool, sent by the next publish
    assert read_counters(data_dir / "hooks") == {"unavailable": 2, "spooled": 1}
    assert [p.suffix for p in (data_dir / "hooks" / "spool").iterdir()] == [".jsonl"]


def test_after_turn_records_locally_without_redis(data_dir: Path, tmp_path: Path) -> None:
    env = {"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_OWNER": OWNER, "FIXMEM_PROJECT": PROJECT}
    harness = Harness.from_env(env, workspace=str(tmp_path), session="s")
    turn = {
        "user_message": "parse_csv drops quoted commas",
        "tool_events": [
            {
                "tool": "edit",
                "input": {"path": "src/csv_io.py", "old_str": "split(',')", "new_str": "reader"},
            },
            {"tool": "bash", "input": {"command": "pytest -q"}, "output": "3 passed", "exit_code": 0},
        ],
    }
    event_id = harness.after_turn(turn)
    assert event_id is not None and harness.after_turn(turn) == event_id  # same turn, same id
    (entry,) = fix_store(data_dir).read(OWNER, PROJECT).entries
    assert entry.files == ["src/csv_io.py"] and entry.outcome == "fixed"
