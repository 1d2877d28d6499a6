"""The Claude Code hook without the CLI: ``python -S <site>/fixmem/hooks/__main__.py claude-code`` (what
``fixmem install claude-code`` writes), ``python -m fixmem.hooks claude-code`` or ``fixmem-hook claude-code``.

Skips click and the ``fixmem`` command's machinery. Run as a file with ``-S`` it also skips ``site``
(the ``.pth`` files and an editable install's import finder: ~15 ms of CPU a call on the bench machine,
``bench/hooks.py``): the directory holding the ``fixmem`` package replaces the script's own directory on
``sys.path`` (which would shadow the standard library's ``http`` with ``fixmem/hooks/http.py``); the
fast path needs only the standard library, and what needs the rest (the recall daemon, the publisher)
runs in processes of its own. Unknown harness names print nothing and exit 0 (never in the agent's way).
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and not __package__:  # run as a file: the package's parent goes on sys.path
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
