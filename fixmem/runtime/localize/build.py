"""``python -m fixmem.runtime.localize.build --cache-dir D --root R --head H``: build one checkout's index.

The child process the recall daemon (or a remote-mode client) starts so that no recall waits for a
build: it lists, scans and caches the index of the checkout (``fixmem.runtime.localize.checkout.build``)
at its own low CPU priority, and exits ``OK`` (built), ``BUSY`` (another process builds this root) or
``FAILED`` (the reason on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from fixmem.runtime.localize.checkout import BuildBusy, Checkout, build

OK, FAILED, BUSY = 0, 1, 75  # 75: EX_TEMPFAIL, try again later
NICE = 10  # the build yields the CPU to the agent and to the daemon's answers


def main(argv: list[str] | None = None) -> int:
    """Build the index; the exit status (``OK``, ``BUSY``, ``FAILED``)."""
    parser = argparse.ArgumentParser(prog="python -m fixmem.runtime.localize.build")
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--head", required=True)
    args = parser.parse_args(argv)
    with contextlib.suppress(OSError):
        os.nice(NICE)
    try:
        build(args.cache_dir, Checkout(args.root, args.head))
    except BuildBusy:
        return BUSY
    except Exception as exc:  # a child: whatever went wrong is the build's failure
        sys.stderr.write(f"index of {args.root} at {args.head[:12]}: {type(exc).__name__}: {exc}\n")
        return FAILED
    return OK


if __name__ == "__main__":
    raise SystemExit(main())
