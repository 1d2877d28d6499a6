"""``fixmem mcp`` started outside the checkout (as MCP clients do) checks recalled files against the
project's workspace, not its own directory, and says at start which project and workspace it serves."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import redis
from mcp import ClientSession, StdioServerParameters, stdio_client

from ingest.workspaces import record, resolve_workspace
from tests.fixmem.mcp.test_server import OWNER, PROJECT, ROOT, _seed


def _checkout(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/acme/widgets.git\n')
    (path / "src").mkdir()
    (path / "src" / "csv_io.py").write_text("import csv\n")
    return path


async def _recall(data_dir: Path, cwd: Path, redis_url: str, errlog: Path) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fixmem", "mcp", "--owner", OWNER, "--project", PROJECT],
        env={
            "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url, "PYTHONPATH": str(ROOT),
            "PATH": os.environ.get("PATH", ""),
        },
        cwd=str(cwd),
    )  # fmt: skip
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("recall_fixes", {"query": "parse_csv splits quoted commas"})


def test_mcp_started_elsewhere_checks_files_in_the_projects_checkout(
    data_dir: Path, tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    """Failed on the old code: the file was reported gone (the server looked in its own directory)."""
    _seed(data_dir)
    checkout = _checkout(tmp_path / "widgets")
    with redis_client.pipeline() as pipe:  # what the consumer records from the project's events
        record(pipe, {OWNER: {str(checkout): PROJECT}})
        pipe.execute()
    elsewhere = tmp_path / "client-home"
    elsewhere.mkdir()
    errlog = tmp_path / "mcp.err"
    hit = anyio.run(_recall, data_dir, elsewhere, redis_url, errlog)
    (fix,) = hit.structured_content["fixes"]
    assert fix["entry"]["files"] == ["src/csv_io.py"] and fix["stale"] == []
    assert (
        f"fixmem mcp: owner {OWNER}, project {PROJECT} (1 fixes), workspace {checkout} "
        "(where the project's events came from)" in errlog.read_text()
    )


def test_the_workspace_rules(tmp_path: Path) -> None:
    checkout = str(_checkout(tmp_path / "widgets"))
    other = str(tmp_path)

    def none() -> list[str]:
        return []

    def down() -> list[str]:
        raise ConnectionError("redis down")

    given = Path(other)
    assert resolve_workspace(PROJECT, given=given, cwd=checkout, recorded=none)[0] == other
    assert resolve_workspace(PROJECT, given=None, cwd=checkout, recorded=none) == (
        checkout,
        "the current directory",
    )
    assert (
        resolve_workspace(PROJECT, given=None, cwd=other, recorded=lambda: [other, checkout])[0] == checkout
    )
    for recorded in (none, down, lambda: ["/no/such/dir"]):
        where, why = resolve_workspace(PROJECT, given=None, cwd=other, recorded=recorded)
        assert where is None and "recalled files are not checked (pass --workspace)" in why
