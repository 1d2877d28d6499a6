"""``python -m fixmem.hooks claude-code`` (or ``fixmem-hook claude-code``): the hook without the CLI.

Skips click and the ``fixmem`` command's machinery: the hook path imports the standard library and, in
local mode, the store. Unknown harness names print nothing and exit 0 (never in the agent's way).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch on the harness name (``claude-code``); always 0."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["claude-code"]:
        from fixmem.hooks import claude_code  # noqa: PLC0415

        return claude_code.main(args[1:])
    print("usage: fixmem-hook claude-code < payload.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
