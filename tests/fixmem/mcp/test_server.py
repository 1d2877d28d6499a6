"""``fixmem mcp`` as a subprocess, driven by the ``mcp`` package's stdio client: tools/list, tools/call."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

from fixmem.mcp.tool import INPUT_SCHEMA, NOTHING_RELEVANT
from store import FixEntry, TestRun, entry_id
from tests.configs import fix_store

ROOT = Path(__file__).resolve().parents[3]
OWNER = "alice"
PROJECT = "github.com/acme/widgets"


def _seed(data_dir: Path) -> str:
    entry = FixEntry(
        id=entry_id(OWNER, PROJECT, "ev-1"),
        ts=1_700_000_000.0,
        project=PROJECT,
        task="parse_csv drops quoted commas",
        files=["src/csv_io.py"],
        symbols=["parse_csv"],
        errors=["AssertionError: assert ['a', '\"b'] == ['a', 'b,c']"],
        tests=TestRun(command="pytest -q tests/test_csv_io.py", ok=True),
        outcome="fixed",
        solution="use csv.reader instead of str.split",
        tags=["fixed"],
    )
    fix_store(data_dir).append(OWNER, PROJECT, [entry])
    return entry.id


async def _session_calls(data_dir: Path, workspace: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fixmem", "mcp", "--owner", OWNER, "--workspace", str(workspace)],  # keyed by its origin
        env={"FIXMEM_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")},
        cwd=str(ROOT),
    )
    with open(os.devnull, "w") as errlog:  # the server's log lines (stderr)
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            tools = await session.list_tools()
            hit = await session.call_tool("recall_fixes", {"query": "parse_csv splits quoted commas", "k": 3})
            miss = await session.call_tool("recall_fixes", {"query": "rotate the kubernetes tls certificate"})
            bad = await session.call_tool("recall_fixes", {"query": "x", "k": 99})
            unknown = await session.call_tool("forget_everything", {})
    return {"init": init, "tools": tools, "hit": hit, "miss": miss, "bad": bad, "unknown": unknown}


def _text(result: Any) -> str:
    assert isinstance(result, types.CallToolResult)
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_a_real_mcp_client_lists_and_calls_recall_fixes(data_dir: Path, tmp_path: Path) -> None:
    fix_id = _seed(data_dir)
    (tmp_path / ".git").mkdir()  # a checkout of PROJECT: the server keys it by its origin remote
    (tmp_path / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://github.com/acme/widgets.git\n'
    )
    got = anyio.run(_session_calls, data_dir, tmp_path)
    assert got["init"].server_info.name == "fixmem"
    (tool,) = got["tools"].tools
    assert tool.name == "recall_fixes"
    assert tool.input_schema == INPUT_SCHEMA
    assert tool.annotations.read_only_hint is True

    hit = got["hit"]
    assert hit.is_error is False
    assert "Past fixes in this project" in _text(hit)
    assert "parse_csv drops quoted commas" in _text(hit)
    assert hit.structured_content["fixes"][0]["entry"]["id"] == fix_id

    assert got["miss"].is_error is False
    assert _text(got["miss"]) == NOTHING_RELEVANT

    assert got["bad"].is_error is True
    assert re.search(r"\bk: [^\n;]*\b50\b", _text(got["bad"])), _text(got["bad"])
    assert got["unknown"].is_error is True
    assert "unknown tool 'forget_everything'" in _text(got["unknown"])
