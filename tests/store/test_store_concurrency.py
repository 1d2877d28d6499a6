"""Many processes writing one project: every line whole, nothing lost, rotation accounted for."""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.synchronize import Event
from pathlib import Path

import orjson
import pytest

from store import FixStore
from store.paths import project_files
from store.persist.fixlog import read_index
from store.persist.summary_file import read_summary
from store.recall.index import build_index
from store.summary import summarize
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry

WRITERS = 8
PER_WRITER = 200
CTX = mp.get_context("fork")


def _writer(
    data_dir: str, writer: int, per_writer: int, cap: int, slack: int, start: Event, out: mp.Queue
) -> None:  # type: ignore[type-arg]
    """Append ``per_writer`` entries in batches of 1, 2, 3, 4, 1, 2, ...; report what was dropped."""
    store = FixStore(data_dir, cap=cap, slack=slack)
    entries = [
        make_entry(
            f"{writer}-{i}", f"writer {writer} task {i} about component {i % 17}", files=[f"m{i % 7}.py"]
        )
        for i in range(per_writer)
    ]
    start.wait()
    dropped: list[str] = []
    i, size = 0, 1
    while i < len(entries):
        result = store.append(OWNER, PROJECT, entries[i : i + size])
        dropped.extend(e.id for e in result.dropped)
        i += size
        size = size % 4 + 1
    out.put((writer, dropped))


def _run_writers(
    data_dir: Path, writers: int, per_writer: int, cap: int, slack: int = 0
) -> dict[int, list[str]]:
    start = CTX.Event()
    out: mp.Queue = CTX.Queue()  # type: ignore[type-arg]
    procs = [
        CTX.Process(target=_writer, args=(str(data_dir), w, per_writer, cap, slack, start, out))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    start.set()
    results = dict(out.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def test_eight_processes_appending_200_entries_each(data_dir: Path) -> None:
    _run_writers(data_dir, WRITERS, PER_WRITER, cap=10_000)
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    raw = files.log.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    assert len(lines) == WRITERS * PER_WRITER
    ids = [orjson.loads(line)["id"] for line in lines]  # every line whole JSON
    assert len(set(ids)) == WRITERS * PER_WRITER
    result = fix_store(data_dir, cap=10_000).read(OWNER, PROJECT)  # a reader rotates to its own cap
    assert len(result.entries) == WRITERS * PER_WRITER
    assert result.malformed == [] and not result.incomplete_tail
    expected = {make_entry(f"{w}-{i}").id for w in range(WRITERS) for i in range(PER_WRITER)}
    assert set(ids) == expected
    assert read_index(files.index) == build_index(result.entries)
    assert not files.quarantine.exists()
    written = read_summary(files.summary, files.log)  # the last writer's, under the lock: of the final log
    assert written is not None and written[1] == summarize(result.entries)


@pytest.mark.parametrize("slack", [0, 7])
def test_concurrent_appends_with_rotation_account_for_every_entry(data_dir: Path, slack: int) -> None:
    writers, per_writer, cap = 4, 60, 50
    reported = _run_writers(data_dir, writers, per_writer, cap, slack)
    kept = {e.id for e in fix_store(data_dir, cap=cap).read(OWNER, PROJECT).entries}
    dropped = [i for ids in reported.values() for i in ids]
    assert len(kept) == cap
    assert len(dropped) == len(set(dropped))  # each entry dropped once, by exactly one writer
    assert kept | set(dropped) == {
        make_entry(f"{w}-{i}").id for w in range(writers) for i in range(per_writer)
    }
    assert not kept & set(dropped)
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    written = read_summary(files.summary, files.log)
    assert written is not None and written[1] == summarize(
        fix_store(data_dir, cap=cap).read(OWNER, PROJECT).entries
    )
    assert len(files.log.read_bytes().splitlines()) <= cap + slack
