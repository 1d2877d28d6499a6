"""``overwrite_in_place``: the file holds exactly the new bytes, and it is cut only when it was longer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from store.persist import fsio


def test_the_file_holds_exactly_the_new_bytes_whether_it_grew_or_shrank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.summary.json"
    cuts: list[int] = []
    real = os.ftruncate
    monkeypatch.setattr(fsio.os, "ftruncate", lambda fd, n: cuts.append(n) or real(fd, n))
    fsio.overwrite_in_place(path, b"short")
    fsio.overwrite_in_place(path, b"a longer body")
    fsio.overwrite_in_place(path, b"a longer bodz")  # the same length
    assert path.read_bytes() == b"a longer bodz" and cuts == []  # grown or as long: nothing to cut
    fsio.overwrite_in_place(path, b"tiny")
    assert path.read_bytes() == b"tiny" and cuts == [4]
