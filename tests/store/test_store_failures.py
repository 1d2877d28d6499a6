"""Failures on real files: unwritable directories and a full disk leave the log intact and name the path."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from store import FixStore, StoreUnavailable
from store.paths import project_files
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry


def _log(data_dir: Path) -> Path:
    return project_files(data_dir / "fix_memory", OWNER, PROJECT).log


def test_a_data_dir_that_is_a_file_is_named_in_the_error(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("not a directory")
    with pytest.raises(StoreUnavailable) as caught:
        fix_store(blocker).append(OWNER, PROJECT, [make_entry(1)])
    assert str(blocker) in str(caught.value)
    assert caught.value.path.startswith(str(blocker))


def test_an_unwritable_directory_is_named_in_the_error(data_dir: Path) -> None:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [make_entry(1)])
    directory = _log(data_dir).parent
    directory.chmod(0o500)
    try:
        probe = directory / "probe"
        try:
            probe.touch()
        except PermissionError:
            pass
        else:
            probe.unlink()
            pytest.skip("running with CAP_DAC_OVERRIDE (root): permissions are not enforced")
        before = _log(data_dir).read_bytes()
        with pytest.raises(StoreUnavailable, match="permission denied") as caught:
            FixStore(data_dir, cap=1).append(OWNER, PROJECT, [make_entry(2)])  # needs a rewrite
        assert str(directory) in str(caught.value)
        assert _log(data_dir).read_bytes() == before
    finally:
        directory.chmod(0o700)


def _fail_on(
    monkeypatch: pytest.MonkeyPatch, name: str, predicate: Callable[[str], bool], code: int = errno.ENOSPC
) -> list[str]:
    """Make ``os.<name>`` raise ``code`` for file descriptors / paths matching ``predicate``."""
    real = getattr(os, name)
    hits: list[str] = []

    def target_of(arg: object) -> str:
        if isinstance(arg, int):
            try:
                return os.readlink(f"/proc/self/fd/{arg}")
            except OSError:
                return ""
        return os.fspath(arg)  # type: ignore[call-overload,no-any-return]

    def fake(*args: object, **kwargs: object) -> object:
        where = target_of(args[0])
        if predicate(where):
            hits.append(where)
            raise OSError(code, os.strerror(code))
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, fake)
    return hits


@pytest.mark.parametrize("operation", ["write", "fsync", "replace"])
def test_enospc_during_rotation_leaves_the_old_log_intact(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    store = FixStore(data_dir, cap=5)
    store.append(OWNER, PROJECT, [make_entry(i, f"task {i}") for i in range(5)])
    log = _log(data_dir)
    before = log.read_bytes()
    hits = _fail_on(monkeypatch, operation, lambda where: where.endswith(".tmp"))

    with pytest.raises(StoreUnavailable, match="no space left on device") as caught:
        store.append(OWNER, PROJECT, [make_entry(9, "task 9")])  # over the cap: a rewrite
    assert hits and str(log) in str(caught.value)
    assert log.read_bytes() == before
    assert not [p for p in log.parent.iterdir() if p.name.endswith(".tmp")]  # no temp file left behind

    monkeypatch.undo()  # space is back: the same batch goes in
    assert [e.id for e in store.append(OWNER, PROJECT, [make_entry(9, "task 9")]).added] == [make_entry(9).id]
    assert len(fix_store(data_dir).read(OWNER, PROJECT).entries) == 5


def test_enospc_during_append_leaves_no_torn_line(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [make_entry(1, "first")])
    log = _log(data_dir)
    before = log.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:  # a short write, then the disk is full
        if os.readlink(f"/proc/self/fd/{fd}") == str(log):
            if len(data) > 10:
                return real_write(fd, bytes(data)[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(StoreUnavailable, match="no space left on device"):
        store.append(OWNER, PROJECT, [make_entry(2, "second"), make_entry(3, "third")])
    monkeypatch.undo()
    assert log.read_bytes() == before  # the half-written batch was cut back
    result = fix_store(data_dir).read(OWNER, PROJECT)
    assert [e.task for e in result.entries] == ["first"] and not result.incomplete_tail


def test_an_unreadable_log_is_named_in_the_error(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [make_entry(1)])
    log = _log(data_dir)
    _fail_on(monkeypatch, "open", lambda where: where == str(log), errno.EACCES)
    with pytest.raises(StoreUnavailable, match="permission denied") as caught:
        fix_store(data_dir).recall(OWNER, PROJECT, "anything")
    assert caught.value.path == str(log)


def test_permission_denied_mid_rewrite_names_the_log(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same failure as a read-only directory, injected (a root test run ignores chmod)."""
    store = FixStore(data_dir, cap=2)
    store.append(OWNER, PROJECT, [make_entry(1), make_entry(2)])
    before = _log(data_dir).read_bytes()
    _fail_on(monkeypatch, "open", lambda where: where.endswith(".tmp"), errno.EACCES)
    with pytest.raises(StoreUnavailable, match="permission denied") as caught:
        store.append(OWNER, PROJECT, [make_entry(3)])
    assert caught.value.path == str(_log(data_dir))
    assert _log(data_dir).read_bytes() == before
