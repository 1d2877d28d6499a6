"""The agent-facing surface: the ``recall_fixes`` tool (``tool``), served over MCP (``server``). Which
checkout ``fixmem mcp`` checks recalled files against is ``ingest.workspaces.resolve_workspace``."""
