"""Lineages by the turns' time (``store.lineage``): the newest of a lineage is the one with the latest
``ts`` (ties: id), whatever order the lines arrived in."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import FixEntry, FixStore
from store.history import superseded_by
from store.lineage import ordered_prefix, relinked, supersession
from store.paths import project_files
from store.recall.view import ProjectView
from tests.store.factories import OWNER, PROJECT, make_entry

DAY = 86_400.0
OLD_TS = 1_783_296_000.0  # 2026-07-06
NEW_TS = OLD_TS + 70 * DAY  # 2026-09-14
TASK = "fix the login timeout in the session refresh"


def _turns() -> tuple:  # type: ignore[type-arg]
    old = make_entry("old", TASK, files=["src/auth.py"], ts=OLD_TS, solution="raise the timeout to 30 s")
    new = make_entry(
        "new", TASK, files=["src/auth.py"], ts=NEW_TS, solution="refresh the token before expiry"
    )
    return old, new


def test_a_late_replay_of_an_older_turn_does_not_hide_the_newer_fix(data_dir: Path) -> None:
    old, new = _turns()
    store = FixStore(data_dir, cap=50)
    store.append(OWNER, PROJECT, [new])
    store.append(OWNER, PROJECT, [old])  # the backfill arrives late

    for reader in (store, FixStore(data_dir, cap=50)):  # the warm view and a cold parse
        found = reader.recall(OWNER, PROJECT, TASK, now=NEW_TS)
        assert [r.entry.id for r in found] == [new.id]
        assert [e.id for e in reader.lineage(OWNER, PROJECT, old.id)] == [old.id, new.id]
        assert reader.stats(OWNER, PROJECT).superseded == 1


# -- any arrival order, the same memory -------------------------------------------------------------------

TASKS = [
    "fix the login timeout in the session refresh",
    "fix the login timeout bug in session refresh",
    "fix the session refresh login timeout",
    "cache invalidation drops fresh keys",
]
CAP = 6


@st.composite
def turns(draw: st.DrawFn) -> list[FixEntry]:
    """Up to ``CAP`` turns of one project with distinct ``ts``, many alike in meaning and files."""
    n = draw(st.integers(2, CAP))
    stamps = draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n, unique=True))
    out = []
    for i, stamp in enumerate(stamps):
        out.append(
            make_entry(
                i,
                draw(st.sampled_from(TASKS)),
                files=draw(
                    st.sampled_from([["src/auth.py"], ["src/auth.py", "src/session.py"], ["src/cache.py"]])
                ),
                outcome=draw(st.sampled_from(["fixed", "fixed", "partial", "unverified"])),
                ts=OLD_TS + stamp * 60.0,
            )
        )
    return out


def _memory(store: FixStore, entries: list[FixEntry]) -> tuple:  # type: ignore[type-arg]
    """What the store answers of a project: recall for every task, each lineage, the superseded count."""
    recalled = {
        task: [(r.entry.id, round(r.score, 6)) for r in store.recall(OWNER, PROJECT, task, now=NEW_TS)]
        for task in TASKS
    }
    chains = {e.id: [x.id for x in store.lineage(OWNER, PROJECT, e.id)] for e in entries}
    return recalled, chains, store.stats(OWNER, PROJECT).superseded


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=turns(), data=st.data())
def test_any_arrival_order_gives_the_same_recall_and_lineages(
    entries: list[FixEntry], data: st.DataObject
) -> None:
    arrival = data.draw(st.permutations(entries))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(entries) - 1))))  # batches of the arrival order
    with tempfile.TemporaryDirectory() as in_time, tempfile.TemporaryDirectory() as late:
        timely = FixStore(in_time, cap=CAP)
        for entry in sorted(entries, key=lambda e: (e.ts, e.id)):
            timely.append(OWNER, PROJECT, [entry])
        expected = _memory(timely, entries)
        replayed = FixStore(late, cap=CAP)
        for start, end in zip([0, *cuts], [*cuts, len(arrival)], strict=True):
            replayed.append(OWNER, PROJECT, arrival[start:end])
        assert _memory(replayed, entries) == expected  # the writer's view, carried over appends
        assert _memory(FixStore(late, cap=CAP), entries) == expected  # a cold parse of the same log
        chains = expected[1]
        for chain in chains.values():  # each lineage runs forward in time
            stamps = [next(e.ts for e in entries if e.id == i) for i in chain]
            assert stamps == sorted(stamps)


# -- the pure rule and the view's incremental path ---------------------------------------------------------


@pytest.mark.parametrize(
    ("stamps", "prefix"),
    [
        ([], 0),
        ([1], 1),
        ([1, 2, 3], 3),
        ([3, 1, 2], 0),
        ([1, 2, 4, 3], 2),  # 4 is not before 3 in time: both decided again
        ([1, 3, 2, 4], 1),
        ([1, 2, 3, 0], 0),  # a late replay of the oldest turn: every line decided again
    ],
)
def test_ordered_prefix(stamps: list[int], prefix: int) -> None:
    entries = [make_entry(i, ts=OLD_TS + s) for i, s in enumerate(stamps)]
    assert ordered_prefix(entries) == prefix


def _lineage_of_three() -> list[FixEntry]:
    return [
        make_entry(i, TASK, files=["src/auth.py"], ts=OLD_TS + i * DAY, outcome=outcome)
        for i, outcome in enumerate(["fixed", "partial", "fixed"])
    ]


def test_a_failed_retry_never_hides_a_fix_whatever_came_first(tmp_path: Path) -> None:
    first, retry, fix = _lineage_of_three()
    orders = [[first, retry, fix], [retry, fix, first], [fix, retry, first], [retry, first, fix]]
    for n, arrival in enumerate(orders):
        store = FixStore(tmp_path / str(n), cap=10)
        for entry in arrival:
            store.append(OWNER, PROJECT, [entry])
        assert [e.id for e in store.lineage(OWNER, PROJECT, retry.id)] == [retry.id], arrival
        assert [e.id for e in store.lineage(OWNER, PROJECT, first.id)] == [first.id, fix.id], arrival


def test_the_views_incremental_path_matches_a_fresh_view() -> None:
    first, retry, fix = _lineage_of_three()
    later = make_entry(9, TASK, files=["src/auth.py"], ts=OLD_TS + 9 * DAY)
    view = ProjectView([fix])
    assert view.superseded == {}  # computed, so ``extend`` carries it over
    steps = [[retry], [first], [later]]  # older turns first (decided again), then a newer one (carried)
    log = [fix]
    for step in steps:
        view = view.extend(step)
        log += step
        fresh = ProjectView(log)
        assert view.superseded == fresh.superseded == supersession(log)
        assert view.live.tolist() == fresh.live.tolist()
    assert view.superseded == {first.id: fix.id, fix.id: later.id}
    kept = view.subset([1, 2, 3])  # rotation drops the fix: the rest is decided again
    assert kept.superseded == supersession(kept.entries) == ProjectView(kept.entries).superseded


def test_relinked_is_the_log_in_time_order_with_the_decided_links() -> None:
    first, retry, fix = _lineage_of_three()
    arrival = [retry, fix, first]
    decided = supersession(arrival)
    repaired = relinked(arrival, decided)
    assert [e.id for e in repaired] == [first.id, retry.id, fix.id]
    assert [e.supersedes for e in repaired] == [None, None, first.id]
    assert ordered_prefix(repaired) == len(repaired)
    assert superseded_by(repaired) == supersession(repaired) == decided


def test_repair_rewrites_an_old_log_in_time_order_and_answers_the_same(data_dir: Path) -> None:
    first, retry, fix = _lineage_of_three()
    store = FixStore(data_dir, cap=10)
    for entry in (fix, retry, first):  # a late replay: every line out of time order
        store.append(OWNER, PROJECT, [entry])
    before = _memory(store, [first, retry, fix])
    log = project_files(store.root, OWNER, PROJECT).log
    stored = [orjson.loads(line)["supersedes"] for line in log.read_bytes().splitlines()]
    assert stored == [None, None, fix.id]  # the older fix names the newer one: a hint readers redo

    check = store.repair(OWNER, PROJECT, check=True)
    assert (check.moved, check.relinked, check.written) == (2, 2, False)
    assert store.repair(OWNER, PROJECT).written
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert [(d["id"], d["supersedes"]) for d in lines] == [
        (first.id, None),
        (retry.id, None),
        (fix.id, first.id),
    ]
    for reader in (store, FixStore(data_dir, cap=10)):
        assert _memory(reader, [first, retry, fix]) == before
    again = store.repair(OWNER, PROJECT)
    assert not again.needed and not again.written  # idempotent


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=turns(), data=st.data())
def test_past_the_cap_the_writer_answers_as_a_cold_parse(
    entries: list[FixEntry], data: st.DataObject
) -> None:
    """Rotation drops entries by (verified, ts, id) whatever the arrival order; the writer's carried view
    and a fresh parse of the rotated log agree on what they answer."""
    cap = data.draw(st.integers(1, len(entries)))
    with tempfile.TemporaryDirectory() as root:
        store = FixStore(root, cap=cap)
        for entry in data.draw(st.permutations(entries)):
            store.append(OWNER, PROJECT, [entry])
        kept = store.read(OWNER, PROJECT).entries
        assert _memory(store, kept) == _memory(FixStore(root, cap=cap), kept)
