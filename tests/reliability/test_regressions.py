"""Fast regression tests, one per failure the reliability runs found (each fails on the code before its fix).

The scenario that found each one lives in its own module; these pin the root cause in a second or less.
"""

from __future__ import annotations

from pathlib import Path

from store import FixStore
from store.fsio import temp_name
from store.paths import project_files
from tests.store.factories import OWNER, PROJECT, make_entry


def test_a_rewrite_killed_before_its_rename_leaves_no_temp_file_after_the_next_write(data_dir: Path) -> None:
    """Found by test_rotation_kill: a worker SIGKILLed mid-rotation left a full copy of the log behind."""
    store = FixStore(data_dir, cap=3)
    store.append(OWNER, PROJECT, [make_entry(n) for n in range(3)])
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    stale = [temp_name(files.log), temp_name(files.index)]  # what a killed rewrite leaves
    for path in stale:
        path.write_bytes(files.log.read_bytes())
    unrelated = files.directory / ".notes.tmp"
    unrelated.write_text("not ours")

    store.append(OWNER, PROJECT, [make_entry(3)])  # rotates (cap 3) under the lock

    assert not any(p.exists() for p in stale)
    assert unrelated.exists()
    assert len(store.read(OWNER, PROJECT).entries) == 3
