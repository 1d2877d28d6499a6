"""``fixmem mcp``: the ``recall_fixes`` tool over the Model Context Protocol (stdio), with the ``mcp`` SDK.

One tool, read-only. ``tools/list`` returns ``tool_schema("mcp")``; ``tools/call`` runs ``recall_fixes``
in a worker thread (the store reads files) and answers with the text for the model plus the fixes as
``structuredContent``. Bad arguments and store failures come back as tool errors (``isError``), so the
model can read them and correct itself; stdout carries only the protocol (logs go to stderr).
"""

from __future__ import annotations

import logging
from importlib.metadata import version
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from fixmem.errors import InvalidInput, classify
from fixmem.mcp.tool import DESCRIPTION, TOOL_NAME, ToolContext, recall_fixes, tool_schema

log = logging.getLogger("fixmem.mcp")

INSTRUCTIONS = (
    "fixmem remembers how past tasks in this project were fixed. Before working on a bug or a failing "
    "test, call recall_fixes with the task (and the files and error when known). " + DESCRIPTION
)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def build_server(ctx: ToolContext) -> Server[Any]:
    """An MCP server exposing ``recall_fixes`` for ``ctx``'s owner and project."""

    async def list_tools(request: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool_schema("mcp"))])

    async def call_tool(request: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            return _error(f"unknown tool {params.name!r}: this server has only {TOOL_NAME}")
        try:
            result = await anyio.to_thread.run_sync(recall_fixes, ctx, params.arguments or {})
        except Exception as exc:  # by fixmem.errors.classify, the one table; a bug propagates
            failure = classify(exc)
            if failure is None:
                raise
            if failure.category is not InvalidInput:
                log.error("recall_fixes failed: %s", failure.message)
            return _error(failure.public)
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)], structured_content=result.to_json()
        )

    return Server(
        "fixmem",
        version=version("fixmem"),
        title="fixmem",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _serve(ctx: ToolContext) -> None:
    server = build_server(ctx)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(ctx: ToolContext) -> None:
    """Serve MCP on stdin/stdout until the client closes the connection."""
    log.info("MCP server for owner %s, project %s (stdio)", ctx.owner, ctx.project_key)
    anyio.run(_serve, ctx)
