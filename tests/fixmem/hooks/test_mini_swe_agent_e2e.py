"""A real client end to end: mini-swe-agent 2.4 (its own agent loop, its local environment, the
``DeterministicModel`` it ships for tests) on a git repository made here, through ``fixmem.hooks.harness``.

Task 1 fixes a bug (failing test, edit, passing test); its trajectory (the v2 format) is read with the
mini-swe-agent importer and published to a real Redis, the pipeline writes the entry; task 2, a related
bug in the same function, starts with task 1's fix in its first prompt; an unrelated task 3 with none.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from fixmem.hooks.harness import Harness
from fixmem.settings import Settings
from ingest import keys
from ingest.importers.mini_swe_agent import parse
from tests.configs import fix_store
from tests.fixmem.hooks.conftest import git_checkout
from tests.fixmem.test_pipeline_e2e import drain

OWNER = "alice"
TEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_stats.py"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@pytest.fixture
def mini(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The mini-swe-agent package, its global config kept in ``tmp_path`` and its banner off."""
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mswea"))
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    return importlib.import_module("minisweagent")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "calc"
    (root / "calc").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "stats.py").write_text("def average(xs):\n    return sum(xs) / len(xs)\n")
    (root / "tests" / "test_stats.py").write_text(
        "from calc.stats import average\n\n\ndef test_empty():\n    assert average([]) == 0.0\n"
    )
    return git_checkout(root, "https://github.com/acme/calc")


def run_agent(mini: Any, repo: Path, task: str, steps: list[tuple[str, str]], out: Path) -> dict[str, Any]:
    """Run mini-swe-agent's DefaultAgent on ``task`` with a DeterministicModel answering ``steps``."""
    import yaml  # noqa: PLC0415
    from minisweagent.agents.default import DefaultAgent  # noqa: PLC0415
    from minisweagent.environments.local import LocalEnvironment  # noqa: PLC0415
    from minisweagent.models.test_models import DeterministicModel, make_output  # noqa: PLC0415

    config = yaml.safe_load((Path(mini.__file__).parent / "config" / "mini_textbased.yaml").read_text())
    outputs = [
        make_output(f"{thought}\n\n```mswea_bash_command\n{command}\n```", [{"command": command}], cost=0.0)
        for thought, command in [*steps, ("Done.", SUBMIT)]
    ]
    agent = DefaultAgent(
        DeterministicModel(outputs=outputs),
        LocalEnvironment(cwd=str(repo)),
        **{**config["agent"], "output_path": out, "step_limit": 20, "cost_limit": 0},
    )
    result = agent.run(task)
    assert result["exit_status"] == "Submitted", result
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def first_prompt(trajectory: dict[str, Any]) -> str:
    return str(next(m["content"] for m in trajectory["messages"] if m["role"] == "user"))


def test_mini_swe_agent_task_two_starts_with_the_fix_of_task_one(
    mini: Any, repo: Path, data_dir: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    env = {"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_OWNER": OWNER, "FIXMEM_REDIS_URL": redis_url}

    # task 1: failing test, edit, passing test
    one = Harness.from_env(env, workspace=str(repo), session="task-1")
    task1 = "average() in calc/stats.py raises ZeroDivisionError on an empty list"
    assert one.before_task(task1) == ""  # nothing known yet
    fixed = "def average(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n"
    edit = f"cat > calc/stats.py <<'EOF'\n{fixed}EOF"
    steps = [("Run the failing test.", TEST), ("Guard the empty list.", edit), ("Run the test again.", TEST)]
    traj1 = run_agent(mini, repo, task1, steps, tmp_path / "runs" / "task1.traj.json")
    assert traj1["trajectory_format"] == "mini-swe-agent-1.1"
    (event,) = parse(
        (tmp_path / "runs" / "task1.traj.json").read_bytes(), source="task1", owner=OWNER, project=one.project
    )
    assert event.user_message == task1 and [t.exit_code for t in event.tool_events] == [
        1,
        0,
        0,
        None,
    ]  # the submission: no code
    assert one.after_turn(event) == event.event_id
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 1
    drain(
        Settings.from_env(
            {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_READ_BLOCK_MS": "20"}
        ),
        redis_client,
    )
    (entry,) = fix_store(data_dir).read(OWNER, "github.com/acme/calc").entries
    assert (entry.outcome, entry.files, entry.task) == ("fixed", ["calc/stats.py"], task1)

    # task 2, a related bug in the same function: task 1's fix is in its first prompt
    two = Harness.from_env(env, workspace=str(repo), session="task-2")
    task2 = "average() in calc/stats.py raises TypeError when the list holds None values"
    block = two.before_task(task2)
    assert block.startswith("Past fixes in this project:") and task1 in block
    (repo / "tests" / "test_stats.py").write_text(
        "from calc.stats import average\n\n\ndef test_none():\n    assert average([1, None, 3]) == 2.0\n"
    )
    skip_none = "    xs = [x for x in xs if x is not None]\\n    return sum(xs) \\/ len(xs) if xs else 0.0"
    fix2 = f"sed -i 's/    return sum(xs) \\/ len(xs)/{skip_none}/' calc/stats.py"
    traj2 = run_agent(
        mini,
        repo,
        f"{block}\n\n{task2}",
        [("Run the test.", TEST), ("Skip None.", fix2), ("Again.", TEST)],
        tmp_path / "runs" / "task2.traj.json",
    )
    assert task1 in first_prompt(traj2) and first_prompt(traj2).index(task1) < first_prompt(traj2).index(
        task2
    )
    assert [
        m["extra"]["returncode"]
        for m in traj2["messages"]
        if m["role"] == "user" and "returncode" in m.get("extra", {})
    ][-1] == 0

    # an unrelated task 3 starts with none
    three = Harness.from_env(env, workspace=str(repo), session="task-3")
    task3 = "write a CONTRIBUTING guide describing the release checklist"
    assert three.before_task(task3) == ""
    traj3 = run_agent(
        mini,
        repo,
        task3,
        [("Write it.", "printf '# Contributing\\n' > CONTRIBUTING.md")],
        tmp_path / "runs" / "task3.traj.json",
    )
    assert "Past fixes" not in first_prompt(traj3)
