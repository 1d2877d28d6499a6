"""The checkouts' indexes, kept warm: built in a child process, loaded beside the answers, never waited for.

``Keeper`` lives in a long-lived process (the recall daemon, a harness adapter): ``index_for(cwd)`` is
the index of the checkout ``cwd`` lies in if it is loaded, else None at once — and then a build of that
checkout runs in a child (``python -m fixmem.runtime.localize.build``, one per root at a time), or its cached
index is loaded in a thread. A loaded index older than ``REFRESH_SECONDS`` is refreshed (the child reads
only the files whose mtime changed) while the old one keeps answering; an index of another ``HEAD`` of the
same root answers until the new one is built. A failed build is logged through ``on_failure`` and marked
``<head>.failed`` in the cache: no build of that checkout starts again for ``RETRY_SECONDS``.

``localize_now`` is the one-shot form for a short-lived client (a remote-mode hook): the cached index
if there is one, else a detached build for next time, and () now.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fixmem.runtime.localize.build import BUSY, OK
from fixmem.runtime.localize.checkout import (
    LOCK_NAME,
    Checkout,
    checkout_of,
    index_path,
    load_index,
    newest_index,
    root_dir,
)
from store.localize import CheckoutIndex, Localized, localize

RETRY_SECONDS = 300.0
REFRESH_SECONDS = 60.0
MAX_ROOTS = 4  # checkouts whose index a process keeps loaded; the least recently used is let go
FAILED_SUFFIX = ".failed"


def failed_path(cache_dir: str, checkout: Checkout) -> str:
    return os.path.join(root_dir(cache_dir, checkout.root), checkout.head + FAILED_SUFFIX)


def failed_recently(cache_dir: str, checkout: Checkout, now: float) -> bool:
    """Whether a build of ``checkout`` failed less than ``RETRY_SECONDS`` ago (wall clock ``now``)."""
    try:
        return now - os.stat(failed_path(cache_dir, checkout)).st_mtime < RETRY_SECONDS
    except OSError:
        return False


def building(cache_dir: str, root: str) -> bool:
    """Whether a process holds the build lock of ``root`` (a build runs)."""
    import fcntl  # noqa: PLC0415

    try:
        with open(os.path.join(root_dir(cache_dir, root), LOCK_NAME), "a+b") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
    except OSError:
        return False
    return False


def spawn_build(cache_dir: str, checkout: Checkout, *, detach: bool = False) -> subprocess.Popen[bytes]:
    """Start ``python -m fixmem.runtime.localize.build`` for ``checkout``; its stderr goes to
    ``build.log`` in the root's cache directory. ``detach``: its own session (a client that exits
    before it). Raises OSError."""
    directory = root_dir(cache_dir, checkout.root)
    os.makedirs(directory, exist_ok=True)
    argv = [sys.executable, "-m", "fixmem.runtime.localize.build", "--cache-dir", cache_dir]
    argv += ["--root", checkout.root, "--head", checkout.head]
    with open(os.path.join(directory, "build.log"), "ab") as log:
        return subprocess.Popen(
            argv,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=detach,
            close_fds=True,
        )


def _last_line(cache_dir: str, root: str) -> str:
    try:
        with open(os.path.join(root_dir(cache_dir, root), "build.log"), "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(log.tell() - 2000, 0))
            lines = log.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _mark_failed(cache_dir: str, checkout: Checkout, message: str) -> None:
    try:
        with open(failed_path(cache_dir, checkout), "w", encoding="utf-8") as marker:
            marker.write(message + "\n")
    except OSError:
        pass


@dataclass
class _Root:
    """What is known of one checkout root: the loaded index (of ``checkout``), the running build."""

    checkout: Checkout | None = None
    index: CheckoutIndex | None = None
    loaded_at: float = 0.0
    child: subprocess.Popen[bytes] | None = None
    child_of: Checkout | None = None
    loading: bool = False
    used_at: float = 0.0
    file_id: tuple[int, int] = (0, 0)  # inode and size of the index file loaded: a touched one is the same
    lock: threading.Lock = field(default_factory=threading.Lock)


class Keeper:
    """The warm indexes of the checkouts a process recalls in (``cache_dir``: where they are cached)."""

    def __init__(
        self,
        cache_dir: str,
        *,
        on_failure: Callable[[str], None] | None = None,
        spawn: Callable[[str, Checkout], subprocess.Popen[bytes]] = spawn_build,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache_dir, self.on_failure, self.spawn, self.clock = cache_dir, on_failure, spawn, clock
        self._roots: dict[str, _Root] = {}

    def localized(self, cwd: str, text: str, *, limit: int = 5) -> tuple[Localized, ...] | None:
        """Where ``text`` points in the checkout of ``cwd`` (() for nowhere); None while its index is cold
        or ``cwd`` is no checkout (never waits)."""
        index = self.index_for(cwd)
        if index is None:
            return None
        return localize(text, index, limit=limit) if text.strip() else ()

    def index_for(self, cwd: str) -> CheckoutIndex | None:
        """The loaded index of the checkout of ``cwd`` (of its HEAD, else of an earlier one); None while
        cold. Starts what is missing: a load of the cached index, a build, a refresh."""
        checkout = checkout_of(cwd) if cwd else None
        if checkout is None:
            return None
        now = self.clock()
        slot = self._roots.get(checkout.root)
        if slot is None:
            self._let_go()
            slot = self._roots[checkout.root] = _Root()
        slot.used_at = now
        self._reap(slot)
        current = slot.checkout == checkout and now - slot.loaded_at < REFRESH_SECONDS
        if not current and not slot.loading and slot.child is None:
            self._warm(slot, checkout, now)
        return slot.index

    def _let_go(self) -> None:
        """Drop the least recently used idle checkout when ``MAX_ROOTS`` are kept (its cache stays)."""
        idle = [(s.used_at, root) for root, s in self._roots.items() if s.child is None and not s.loading]
        if len(self._roots) >= MAX_ROOTS and idle:
            del self._roots[min(idle)[1]]

    def poll(self) -> None:
        """Reap the builds that ended (the daemon calls it when idle)."""
        for slot in list(self._roots.values()):
            self._reap(slot)

    def _warm(self, slot: _Root, checkout: Checkout, now: float) -> None:
        """Load the cached index of ``checkout`` if it is not loaded, else (re)build it in a child."""
        if slot.checkout != checkout and os.path.exists(index_path(self.cache_dir, checkout)):
            self._load(slot, checkout)
        elif not failed_recently(self.cache_dir, checkout, now) and not building(
            self.cache_dir, checkout.root
        ):
            try:
                slot.child, slot.child_of = self.spawn(self.cache_dir, checkout), checkout
            except OSError as exc:
                self._failed(checkout, f"cannot start the index build: {exc}")

    def _reap(self, slot: _Root) -> None:
        child, checkout = slot.child, slot.child_of
        if child is None or checkout is None or child.poll() is None:
            return
        slot.child = slot.child_of = None
        if child.returncode == OK:
            self._load(slot, checkout)
        elif child.returncode != BUSY:  # busy: another process builds it; looked at again next time
            self._failed(checkout, _last_line(self.cache_dir, checkout.root) or f"exit {child.returncode}")

    def _load(self, slot: _Root, checkout: Checkout) -> None:
        """Load the cached index of ``checkout`` in a thread (the answers go on meanwhile)."""
        slot.loading = True

        def run() -> None:
            path = index_path(self.cache_dir, checkout)
            try:
                info = os.stat(path)
                built_at = info.st_mtime  # an index built long ago is refreshed at its next use
                if slot.checkout == checkout and slot.file_id == (info.st_ino, info.st_size):
                    slot.loaded_at = built_at  # a refresh found nothing changed: no parse
                    return
                index = load_index(self.cache_dir, checkout)
                if index is None:  # corrupt: removed, so that the next use rebuilds it
                    os.unlink(path)
                else:
                    with slot.lock:
                        slot.index, slot.checkout, slot.loaded_at = index, checkout, built_at
                        slot.file_id = (info.st_ino, info.st_size)
            except OSError as exc:
                self._failed(checkout, f"cannot load the index: {exc}")
            finally:
                slot.loading = False

        threading.Thread(target=run, name="fixmem-index-load", daemon=True).start()

    def _failed(self, checkout: Checkout, message: str) -> None:
        _mark_failed(self.cache_dir, checkout, message)
        if self.on_failure is not None:
            self.on_failure(f"index of {checkout.root}: {message}")


def localize_now(cache_dir: str, cwd: str, text: str, *, limit: int = 5) -> tuple[Localized, ...] | None:
    """Where ``text`` points in the checkout of ``cwd`` from its cached index, for a client that cannot
    wait (None when there is none: a detached build is started for the next call, unless one runs or
    failed lately). Never raises on a missing or corrupt cache."""
    checkout = checkout_of(cwd) if cwd else None
    if checkout is None:
        return None
    index = load_index(cache_dir, checkout)
    if index is None:
        found = newest_index(cache_dir, checkout.root)
        index = found[1] if found else None
        if not building(cache_dir, checkout.root) and not failed_recently(cache_dir, checkout, time.time()):
            with contextlib.suppress(OSError):
                spawn_build(cache_dir, checkout, detach=True)
    if index is None:
        return None
    return localize(text, index, limit=limit) if text.strip() else ()
