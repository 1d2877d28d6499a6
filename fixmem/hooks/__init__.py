"""Agent hooks: fixmem inside Claude Code (``fixmem hook claude-code``) and any Python harness.

The hook path is on the agent's critical path, so it imports only the standard library until it knows
it must read a local store: ``config`` (the ``FIXMEM_*`` values it needs, without pydantic), ``session``
(per-session state: what was injected, the token budget, files seen), ``reader`` (recall through the
HTTP API with urllib, or from the local store), ``claude_code`` (one hook payload in, one answer out),
``publisher`` (the finished turn, in a detached process), ``install`` (the ``.claude/settings.json``
entries). Nothing is imported here.
"""
