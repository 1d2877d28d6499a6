"""The old path of the ``recall_fixes`` tool (the README's integration example imports it): the tool
lives in ``fixmem.mcp.tool``; this shim keeps ``from fixmem.tool import …`` working."""

from __future__ import annotations

from fixmem.mcp.tool import (
    DESCRIPTION,
    INPUT_SCHEMA,
    SCHEMA_FORMATS,
    TOOL_NAME,
    RecallArgs,
    SchemaFormat,
    ToolArgsError,
    ToolContext,
    ToolResult,
    auto_recall,
    parse_args,
    recall_fixes,
    tool_schema,
)

__all__ = [
    "DESCRIPTION",
    "INPUT_SCHEMA",
    "SCHEMA_FORMATS",
    "TOOL_NAME",
    "RecallArgs",
    "SchemaFormat",
    "ToolArgsError",
    "ToolContext",
    "ToolResult",
    "auto_recall",
    "parse_args",
    "recall_fixes",
    "tool_schema",
]
