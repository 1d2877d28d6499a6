"""``remove_stale_temps``: a killed rewrite's temp files go, and a directory unchanged since it was found
clean is not listed again (a scan of every project's files on every append)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from store.persist import fsio
from store.persist.fsio import remove_stale_temps


def _temp(log: Path, pid: int = 4242) -> Path:
    temp = log.with_name(f".{log.name}.{pid}.deadbeef.tmp")
    temp.write_bytes(b"a whole copy of the log\n")
    return temp


def _bump(directory: Path, ns: int) -> None:
    """Move the directory's mtime forward, as a file created later (a coarse clock may not) would."""
    stat = os.stat(directory)
    os.utime(directory, ns=(stat.st_atime_ns, stat.st_mtime_ns + ns))


def test_a_killed_rewrites_temp_files_go_and_other_files_stay(tmp_path: Path) -> None:
    log = tmp_path / "p.jsonl"
    log.write_bytes(b"")
    stale, other = _temp(log), _temp(tmp_path / "q.jsonl")
    assert remove_stale_temps(log) == 1
    assert not stale.exists() and other.exists()  # another project's temp may be a live rewrite


def test_a_directory_found_clean_is_not_listed_again_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "p.jsonl"
    log.write_bytes(b"")
    listings: list[object] = []
    real = os.scandir
    monkeypatch.setattr(fsio.os, "scandir", lambda p: listings.append(p) or real(p))
    assert remove_stale_temps(log) == 0 and len(listings) == 1
    assert remove_stale_temps(log) == 0 and len(listings) == 1  # unchanged: no listing
    stale = _temp(log)  # a writer killed mid-rewrite since: the directory changed
    _bump(tmp_path, 1_000_000)
    assert remove_stale_temps(log) == 1 and len(listings) == 2 and not stale.exists()
    assert remove_stale_temps(log) == 0 and len(listings) == 3  # its removal changed the directory again
    assert remove_stale_temps(log) == 0 and len(listings) == 3


def test_forced_sweeps_list_even_an_unchanged_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "p.jsonl"
    log.write_bytes(b"")
    assert remove_stale_temps(log) == 0
    stat = os.stat(tmp_path)
    stale = _temp(log)  # left within the same clock tick: the mtime did not move
    os.utime(tmp_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert remove_stale_temps(log) == 0 and stale.exists()  # the cheap path misses it
    assert remove_stale_temps(log, force=True) == 1 and not stale.exists()  # forget's sweep does not


def test_a_directory_found_free_of_any_temp_is_not_listed_for_its_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = [tmp_path / f"p{i}.jsonl" for i in range(3)]
    for log in logs:
        log.write_bytes(b"")
    listings: list[object] = []
    real = os.scandir
    monkeypatch.setattr(fsio.os, "scandir", lambda p: listings.append(p) or real(p))
    assert remove_stale_temps(logs[0]) == 0 and len(listings) == 1
    assert [remove_stale_temps(log) for log in logs[1:]] == [0, 0] and len(listings) == 1
    live = _temp(logs[1])  # another project's rewrite in progress: the directory is not free of temps
    _bump(tmp_path, 1_000_000)
    assert remove_stale_temps(logs[0]) == 0 and len(listings) == 2 and live.exists()
    assert remove_stale_temps(logs[2]) == 0 and len(listings) == 3  # listed for its own name
    assert remove_stale_temps(logs[1]) == 1 and len(listings) == 4 and not live.exists()
