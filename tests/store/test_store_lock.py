"""The store's project lock: flock on the sibling ``.lock`` file always, a pluggable lock around it.

A lock factory (the pipeline's Redis lease lock) serializes writers across hosts; the flock still excludes
a local writer that has no factory (``FixMemory``, a CLI run without Redis) from the same project.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from store import StoreUnavailable
from store.paths import ROOT_DIR_NAME, project_files
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry


def _flock_held(path: Path) -> bool:
    """Whether another open file description holds a flock on ``path`` (tried without blocking)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.parametrize("with_factory", [False, True])
def test_every_write_holds_the_flock_with_or_without_a_lock_factory(
    tmp_path: Path, with_factory: bool
) -> None:
    """With a lock factory the store used to take only that lock: a local ``FixMemory`` or a CLI writing
    with flock alone then wrote the same log at the same time (the test fails on the old code: checked)."""
    lock_file = project_files(tmp_path / ROOT_DIR_NAME, OWNER, PROJECT).lock
    inside: list[bool] = []
    seen: list[tuple[bool, bool]] = []  # (inside the factory's lock, flock held) at each clock reading

    @contextmanager
    def held(owner: str, project_key: str) -> Iterator[None]:
        inside.append(True)
        try:
            yield
        finally:
            inside.pop()

    def factory(owner: str, project_key: str) -> AbstractContextManager[object]:
        return held(owner, project_key)

    def clock() -> float:  # the store reads its clock under the lock, while it writes
        if lock_file.exists():
            seen.append((bool(inside), _flock_held(lock_file)))
        return 1_767_225_600.0

    store = fix_store(tmp_path, lock_factory=factory if with_factory else None, clock=clock)
    first, second = make_entry("a", "first fix"), make_entry("b", "second fix")
    store.append(OWNER, PROJECT, [first])
    store.append(OWNER, PROJECT, [second])
    assert store.forget(OWNER, first.id)
    under_lock = [flocked for in_factory, flocked in seen if in_factory or not with_factory]
    assert under_lock and all(under_lock)
    assert not _flock_held(lock_file)  # released after each write


def test_a_file_system_without_flock_relies_on_the_factory_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some network file systems refuse flock (ENOLCK): with a distributed lock the write goes on under it;
    without one there is no lock at all, and the store says so instead of writing unlocked."""

    def refuse(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refuse)
    taken: list[str] = []

    @contextmanager
    def lease(owner: str, project_key: str) -> Iterator[None]:
        taken.append(project_key)
        yield

    with_lease = fix_store(tmp_path / "a", lock_factory=lease)
    assert with_lease.append(OWNER, PROJECT, [make_entry("a", "first fix")]).added
    assert taken == [PROJECT]
    with pytest.raises(StoreUnavailable, match="No locks available"):
        fix_store(tmp_path / "b").append(OWNER, PROJECT, [make_entry("a", "first fix")])
