"""What the index of a checkout is doing now, for ``fixmem doctor`` and ``fixmem hook claude-code --check``.

Read from the cache the recall daemon keeps (``keeper``): whether the checkout of ``cwd`` has an index of
its ``HEAD`` (and how many files it holds, and how old it is), an index of an earlier ``HEAD`` that answers
meanwhile, a build running now, a build that failed lately (its message, when it is retried), or nothing
yet. Not on the hooks' fast path: it parses the index, as a load would, so a corrupt one shows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from fixmem.runtime.localize.checkout import Checkout, checkout_of, index_path, load_index, newest_index
from fixmem.runtime.localize.keeper import RETRY_SECONDS, building, failed_path, failed_recently


@dataclass(frozen=True)
class IndexState:
    """One line of text on the index of a checkout; ``problem`` when localization cannot work there."""

    text: str
    problem: bool = False


def index_state(cache_dir: str, cwd: str, *, enabled: bool, now: float) -> IndexState:
    """The state of the index of the checkout ``cwd`` lies in, cached under ``cache_dir`` (wall clock
    ``now``). ``enabled``: ``Settings.localize`` (``FIXMEM_LOCALIZE``)."""
    if not enabled:
        return IndexState("off (FIXMEM_LOCALIZE=0): task-start recall is text only")
    checkout = checkout_of(cwd)
    if checkout is None:
        return IndexState(f"{cwd} is in no git checkout: task-start recall is text only here")
    where = f"{checkout.root} at {checkout.head[:12]}"
    running = building(cache_dir, checkout.root)
    suffix = "; a build runs now" if running else ""
    if os.path.exists(index_path(cache_dir, checkout)):
        index = load_index(cache_dir, checkout)
        if index is None:
            return IndexState(f"{where}: the cached index does not load; the next recall rebuilds it", True)
        age = now - os.stat(index_path(cache_dir, checkout)).st_mtime
        return IndexState(f"{where}: indexed, {len(index.files)} files, built {_ago(age)}{suffix}")
    if failed_recently(cache_dir, checkout, now):
        return IndexState(f"{where}: the last build failed ({_failure(cache_dir, checkout)}); "
                          f"retried {RETRY_SECONDS / 60:.0f} minutes after it", problem=True)  # fmt: skip
    older = newest_index(cache_dir, checkout.root)
    if older is not None:
        return IndexState(
            f"{where}: the index of {older[0].head[:12]} answers until this HEAD's is built{suffix}"
        )
    if running:
        return IndexState(f"{where}: the first index builds now; recall is text only until it is done")
    return IndexState(
        f"{where}: not indexed yet; the recall daemon builds it at the next prompt (text only until then)"
    )


def _failure(cache_dir: str, checkout: Checkout) -> str:
    try:
        with open(failed_path(cache_dir, checkout), encoding="utf-8") as marker:
            return marker.read().strip() or "no message"
    except OSError:
        return "no message"


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{max(seconds, 0):.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"
