"""The MCP server end to end with the official ``mcp`` client over stdio: task 1's turn, published through
``fixmem.hooks.harness`` to a real Redis and written by the pipeline, is what ``recall_fixes`` returns for a
related task 2 in a new ``fixmem mcp`` process; an unrelated task 3 gets "nothing relevant"."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import redis
from mcp import ClientSession, StdioServerParameters, stdio_client

from fixmem.hooks.harness import Harness
from fixmem.mcp.tool import NOTHING_RELEVANT
from fixmem.settings import Settings
from tests.configs import fix_store
from tests.fixmem.hooks.conftest import git_checkout
from tests.fixmem.test_pipeline_e2e import drain

ROOT = Path(__file__).resolve().parents[3]
OWNER = "alice"
TASK1 = "parse_csv in src/csv_io.py drops quoted commas"


async def recall_over_stdio(data_dir: Path, workspace: Path, queries: list[str]) -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fixmem", "mcp", "--owner", OWNER, "--workspace", str(workspace)],
        env={"FIXMEM_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")},
        cwd=str(ROOT),
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [await session.call_tool("recall_fixes", {"query": q}) for q in queries]


def text_of(result: Any) -> str:
    assert isinstance(result, types.CallToolResult) and result.is_error is False
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_mcp_recalls_the_published_fix_for_a_related_task_only(
    data_dir: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    workspace = git_checkout(tmp_path / "widgets", "https://github.com/acme/widgets.git")
    env = {"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_OWNER": OWNER, "FIXMEM_REDIS_URL": redis_url}
    harness = Harness.from_env(env, workspace=str(workspace), session="task-1")
    turn = {
        "user_message": TASK1,
        "tool_events": [
            {"tool": "bash", "input": {"command": "pytest -q"}, "exit_code": 1,
             "output": "E   AssertionError: assert ['a', '\"b'] == ['a', 'b,c']\n1 failed"},
            {"tool": "edit", "input": {"path": "src/csv_io.py", "old_str": "line.split(',')",
             "new_str": "next(csv.reader([line]))"}},
            {"tool": "bash", "input": {"command": "pytest -q"}, "exit_code": 0, "output": "4 passed"},
        ],
    }  # fmt: skip
    assert harness.after_turn(turn) is not None
    drain(
        Settings.from_env(
            {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_READ_BLOCK_MS": "20"}
        ),
        redis_client,
    )
    (entry,) = fix_store(data_dir).read(OWNER, "github.com/acme/widgets").entries
    assert entry.outcome == "fixed"

    related, unrelated = anyio.run(
        recall_over_stdio,
        data_dir,
        workspace,
        ["parse_csv in src/csv_io.py drops quoted newlines too", "rotate the kubernetes tls certificate"],
    )
    assert TASK1 in text_of(related)
    assert related.structured_content["fixes"][0]["entry"]["id"] == entry.id
    assert text_of(unrelated) == NOTHING_RELEVANT
