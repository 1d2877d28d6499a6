"""The agent-facing surface: the ``recall_fixes`` tool (``tool``), served over MCP (``server``), and the
checkout ``fixmem mcp`` checks recalled files against (``workspace``)."""
