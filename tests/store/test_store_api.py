"""FixStore on real files: append semantics, idempotence, isolation, forget, hostile names."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import FixEntry, FixStore, InvalidEntry, InvalidKey
from store.paths import owner_dir, project_files
from store.persist.fixlog import read_index
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry


def _dump(entries: list[FixEntry]) -> list[dict]:  # type: ignore[type-arg]
    return [e.model_dump(mode="json") for e in entries]


def test_append_reports_added_duplicates_and_dropped(data_dir: Path) -> None:
    store = FixStore(data_dir, cap=3)
    first = store.append(OWNER, PROJECT, [make_entry(1, "a", outcome="unverified"), make_entry(2, "b")])
    assert [e.id for e in first.added] == [make_entry(1).id, make_entry(2).id]
    assert first.duplicates == [] and first.dropped == [] and first.quarantined == 0

    again = store.append(OWNER, PROJECT, [make_entry(2, "b"), make_entry(3, "c"), make_entry(3, "c")])
    assert again.duplicates == [make_entry(2).id, make_entry(3).id]  # known, and repeated in the batch
    assert [e.id for e in again.added] == [make_entry(3).id]

    rotated = store.append(OWNER, PROJECT, [make_entry(4, "d", outcome="partial")])
    assert [e.id for e in rotated.dropped] == [make_entry(1).id]  # the unverified one went first
    assert [e.task for e in store.read(OWNER, PROJECT).entries] == ["b", "c", "d"]


def test_an_empty_batch_or_only_duplicates_writes_nothing(data_dir: Path) -> None:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [make_entry(1)])
    log = project_files(data_dir / "fix_memory", OWNER, PROJECT).log
    stat = log.stat()
    assert store.append(OWNER, PROJECT, []).added == []
    assert store.append(OWNER, PROJECT, [make_entry(1)]).duplicates == [make_entry(1).id]
    assert (log.stat().st_mtime_ns, log.stat().st_size) == (stat.st_mtime_ns, stat.st_size)


OUTCOME_OF = ("fixed", "partial", "unverified")
# The same id is the same turn, so it always has the same content (as extraction makes it).
batches = st.lists(st.integers(0, 12), max_size=10).map(
    lambda ns: [make_entry(n, f"task {n}", outcome=OUTCOME_OF[n % 3], ts=1000.0 + n % 5) for n in ns]  # type: ignore[arg-type]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches, batches)
def test_appending_the_same_batches_twice_equals_appending_them_once(
    first: list[FixEntry], second: list[FixEntry]
) -> None:
    """Holds with rotation too: what rotation dropped and a replay brings back is dropped again."""
    with (
        mock.patch("os.fsync"),  # durability is not what this property is about; keep it fast
        tempfile.TemporaryDirectory() as once_dir,
        tempfile.TemporaryDirectory() as twice_dir,
    ):
        once, twice = FixStore(once_dir, cap=8), FixStore(twice_dir, cap=8)
        for batch in (first, second):
            once.append(OWNER, PROJECT, batch)
        for batch in (first, first, second, second):
            twice.append(OWNER, PROJECT, batch)
        assert _dump(twice.read(OWNER, PROJECT).entries) == _dump(once.read(OWNER, PROJECT).entries)
        ids = [e.id for e in twice.read(OWNER, PROJECT).entries]
        assert len(ids) == len(set(ids)) <= 8


def test_entries_of_another_project_are_refused_and_nothing_is_written(data_dir: Path) -> None:
    store = fix_store(data_dir)
    stranger = make_entry(2, project="/other")
    with pytest.raises(InvalidEntry, match="/other"):
        store.append(OWNER, PROJECT, [make_entry(1), stranger])
    assert store.read(OWNER, PROJECT).entries == []
    assert not (data_dir / "fix_memory").exists()


@pytest.mark.parametrize(("owner", "project"), [("", PROJECT), (OWNER, "")])
def test_empty_owner_or_project_is_refused(data_dir: Path, owner: str, project: str) -> None:
    with pytest.raises(InvalidKey):
        fix_store(data_dir).append(owner, project, [make_entry(1, project=project)])
    with pytest.raises(InvalidKey):
        fix_store(data_dir).recall(owner, project, "x")


def test_cap_must_be_positive(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="cap"):
        FixStore(data_dir, cap=0)


def test_secrets_are_redacted_before_they_are_written(data_dir: Path) -> None:
    store = fix_store(data_dir)
    token = "ghp_" + "a" * 36
    entry = make_entry(1, f"push with {token}", solution="export AWS_SECRET=abcdefghijklmnop1234")
    added = store.append(OWNER, PROJECT, [entry]).added[0]
    raw = project_files(data_dir / "fix_memory", OWNER, PROJECT).log.read_text()
    assert token not in raw and "abcdefghijklmnop1234" not in raw
    assert "[REDACTED]" in added.task and added.id == entry.id


def test_lineage_and_projects(data_dir: Path) -> None:
    store = fix_store(data_dir)
    a = make_entry(1, "fix login timeout", files=["src/auth.py"])
    b = make_entry(2, "fix the login timeout bug", files=["src/auth.py"])
    store.append(OWNER, PROJECT, [a])
    store.append(OWNER, PROJECT, [b])
    assert [e.id for e in store.lineage(OWNER, PROJECT, a.id)] == [a.id, b.id]
    assert [e.id for e in store.lineage(OWNER, PROJECT, b.id)] == [a.id, b.id]
    assert store.lineage(OWNER, PROJECT, "fix-ffffffffffffffff") == []
    store.append(OWNER, "/second", [make_entry(3, project="/second")])
    assert store.projects(OWNER) == sorted([PROJECT, "/second"])
    assert store.projects("nobody") == []


def test_forget_across_projects_touches_only_that_entry(data_dir: Path) -> None:
    store = fix_store(data_dir)
    one = [make_entry(i, f"one {i}", project="/one") for i in range(3)]
    two = [make_entry(i, f"two {i}", project="/two") for i in range(10, 13)]
    store.append(OWNER, "/one", one)
    store.append(OWNER, "/two", two)
    # Bob holds a line with the very same id (a hand-made collision): forgetting Alice's must not touch it.
    bob_line = two[1].model_copy(update={"project": "/two"})
    store.append("bob", "/two", [bob_line])
    bob_dir = owner_dir(data_dir / "fix_memory", "bob")
    bob_before = {p.name: p.read_bytes() for p in bob_dir.iterdir()}
    one_log = project_files(data_dir / "fix_memory", OWNER, "/one").log
    one_before = one_log.read_bytes()

    assert store.forget(OWNER, two[1].id) is True
    assert [e.task for e in store.read(OWNER, "/two").entries] == ["two 10", "two 12"]
    assert one_log.read_bytes() == one_before
    assert {p.name: p.read_bytes() for p in bob_dir.iterdir()} == bob_before
    index = read_index(project_files(data_dir / "fix_memory", OWNER, "/two").index)
    assert isinstance(index, dict) and two[1].id not in index and len(index) == 2
    assert store.recall(OWNER, "/two", "two 11") == [] or all(
        r.entry.id != two[1].id for r in store.recall(OWNER, "/two", "two 11")
    )

    assert store.forget(OWNER, two[1].id) is False  # already gone
    assert store.forget(OWNER, "fix-0000000000000000") is False
    assert store.forget(OWNER, "../../etc/passwd") is False
    assert store.forget("nobody", one[0].id) is False
    with pytest.raises(InvalidKey):
        store.forget("", one[0].id)


def test_a_forgotten_entry_stays_forgotten_when_its_turn_is_replayed(data_dir: Path) -> None:
    """A re-run backfill or a re-published event makes the same id again: forget must stick."""
    store = fix_store(data_dir)
    wrong, right = make_entry(1, "retry the payout on 500"), make_entry(2, "retry the payout on 429")
    store.append(OWNER, PROJECT, [wrong, right])
    assert store.forget(OWNER, wrong.id) is True
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    assert files.forgotten.read_bytes() == wrong.id.encode() + b"\n"  # the id only, no text

    replay = store.append(OWNER, PROJECT, [wrong, right, make_entry(3, "new")])
    assert replay.forgotten == [wrong.id] and replay.duplicates == [right.id]
    assert [e.id for e in replay.added] == [make_entry(3).id]
    assert wrong.id not in {e.id for e in store.read(OWNER, PROJECT).entries}
    assert wrong.id not in {r.entry.id for r in store.recall(OWNER, PROJECT, "retry the payout on 500")}

    # Another project of the same owner holding the same id is a different log: its tombstones are its own.
    other = wrong.model_copy(update={"project": "/other"})
    assert [e.id for e in store.append(OWNER, "/other", [other]).added] == [wrong.id]

    # A torn tail in the file (a crash mid-append) neither hides the ids before it nor the next one.
    with files.forgotten.open("ab") as f:
        f.write(b"fix-12")
    assert store.forget(OWNER, right.id) is True
    assert store.append(OWNER, PROJECT, [wrong, right]).forgotten == [wrong.id, right.id]


HOSTILE = [
    "..", ".", "../../etc", "/abs/path", "a\x00b", "x" * 10_000, "日本語/项目", "a/b", "a_b", "~", "$HOME",
    "-rf", "con", "\u202eevil", "a\\..\\b", " ", "fix_memory",
]  # fmt: skip


def test_text_that_cannot_be_json_is_refused_with_a_clear_error(data_dir: Path) -> None:
    store = fix_store(data_dir)
    with pytest.raises(InvalidEntry, match="not valid UTF-8"):
        store.append(OWNER, "\ud800", [make_entry(1, project="\ud800")])
    with pytest.raises(InvalidEntry, match="not valid UTF-8"):
        store.append(OWNER, PROJECT, [make_entry(1, "lone \udc80 surrogate")])
    assert store.append("\ud800", PROJECT, [make_entry(1)]).added  # an owner only names a directory


def test_hostile_names_never_escape_the_store_root(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = fix_store(data_dir)
    for owner in HOSTILE:
        for project in HOSTILE:
            entry = make_entry(1, "task", owner=owner, project=project)
            assert store.append(owner, project, [entry]).added
    root = (data_dir / "fix_memory").resolve()
    outside = [
        Path(d, f)
        for d, _, names in os.walk(tmp_path)
        for f in names
        if not Path(d, f).resolve().is_relative_to(root)
    ]
    assert outside == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert sorted(p.name for p in data_dir.iterdir()) == ["fix_memory"]
    assert len(list(root.iterdir())) == len(HOSTILE)  # one directory per owner, none shared
    for owner in ("a/b", "a_b", "x" * 10_000):
        assert store.projects(owner) == sorted(HOSTILE)
        for project in HOSTILE:
            assert [e.project for e in store.read(owner, project).entries] == [project]


def test_a_pluggable_lock_is_held_around_every_write(data_dir: Path) -> None:
    held: list[tuple[str, str]] = []
    calls: list[tuple[str, str]] = []

    @contextmanager
    def lease(owner: str, project_key: str) -> Iterator[None]:
        calls.append((owner, project_key))
        held.append((owner, project_key))
        try:
            yield
        finally:
            held.pop()

    log = project_files(data_dir / "fix_memory", OWNER, PROJECT).log
    store = FixStore(data_dir, cap=2, lock_factory=lease)
    real_append = store._append_locked

    def checked(*args: object, **kwargs: object) -> object:
        assert held == [(OWNER, PROJECT)]  # the write happens inside the lease
        return real_append(*args, **kwargs)  # type: ignore[arg-type]

    store._append_locked = checked  # type: ignore[method-assign]
    store.append(OWNER, PROJECT, [make_entry(1), make_entry(2)])
    store.append(OWNER, PROJECT, [make_entry(3)])  # rotates
    store.forget(OWNER, make_entry(3).id)
    assert calls == [(OWNER, PROJECT)] * 3 and held == []
    assert log.exists() and log.with_name(log.name.replace(".jsonl", ".lock")).exists()  # flock too
    store.recall(OWNER, PROJECT, "anything")  # readers take no lock
    store.stats(OWNER, PROJECT)
    assert len(calls) == 3


def _imported(n: int, event_id: str, **changes: object) -> FixEntry:
    entry = make_entry(n, "parse_row splits quoted commas", ts=1_700_000_000.0)
    return entry.model_copy(update={"id": make_entry(event_id).id, "event_id": event_id, **changes})


def test_an_imported_turn_under_an_id_of_an_earlier_rule_is_recorded_once(data_dir: Path) -> None:
    store = fix_store(data_dir)
    old = _imported(1, "bf-path-derived")
    assert store.append(OWNER, PROJECT, [old]).added == [old]
    again = _imported(1, "bf-content-derived")
    result = store.append(OWNER, PROJECT, [again])
    assert (result.added, result.duplicates, result.same_content) == ([], [], [again.id])
    assert [e.id for e in fix_store(data_dir).read(OWNER, PROJECT).entries] == [old.id]  # cold cache too
    assert fix_store(data_dir).append(OWNER, PROJECT, [again]).same_content == [again.id]
    other = _imported(1, "bf-other-turn", ts=1_700_000_001.0)  # another time: another turn
    assert [e.id for e in store.append(OWNER, PROJECT, [other]).added] == [other.id]


def test_harness_ids_keep_turns_of_the_same_content_apart(data_dir: Path) -> None:
    store = fix_store(data_dir)
    first, second = _imported(1, "turn-1"), _imported(1, "turn-2")
    assert [e.id for e in store.append(OWNER, PROJECT, [first, second]).added] == [first.id, second.id]
    imported = _imported(1, "bf-imported")  # an import is compared with imported turns only
    assert [e.id for e in store.append(OWNER, PROJECT, [imported]).added] == [imported.id]
