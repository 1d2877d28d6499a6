"""store.sessions (pure) and its file: the records of sessions that made no entry join as a semilattice
(a replayed or reordered batch leaves the same records), stay bounded, and ``store.impact`` counts a session
known only from them as not fixed, in its assigned arm; the file is sealed, atomic, and the store keeps it
under the project's lock. Rotation folds the sessions of the entries it drops into the records, with the
outcome each had, so impact keeps them."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from store.impact import HOLDBACK, MEMORY, report, sessions_of
from store.persist.sessions_file import CACHED_FILES, decode, encode, join_into, read_sessions
from store.sessions import KEPT, MAX_IDS, Ended, SessionRecord, from_json, join, merge, record_of, to_json
from tests.configs import fix_store
from tests.store.test_impact import entry

IDS = st.sampled_from([f"fix-{n:016x}" for n in range(6)])
RECORDS = st.builds(
    SessionRecord,
    project=st.just("p"),
    session=st.sampled_from(["s1", "s2", "s3"]),
    arm=st.sampled_from([MEMORY, HOLDBACK]),
    ts=st.integers(0, 5).map(float),
    injected=st.lists(IDS).map(lambda x: tuple(sorted(set(x)))),
    shadow=st.lists(IDS).map(lambda x: tuple(sorted(set(x)))),
    followed=st.lists(IDS).map(lambda x: tuple(sorted(set(x)))),
    ended=st.none()
    | st.builds(
        Ended, st.integers(0, 5).map(float), IDS, st.booleans(), st.none() | st.booleans(), st.booleans()
    ),
)


ONE_SESSION = RECORDS.map(lambda r: dataclasses.replace(r, session="s1"))


@given(ONE_SESSION, ONE_SESSION, ONE_SESSION)
def test_join_is_commutative_associative_and_idempotent(
    a: SessionRecord, b: SessionRecord, c: SessionRecord
) -> None:
    assert join(a, b) == join(b, a)
    assert join(join(a, b), c) == join(a, join(b, c))
    assert join(a, a) == a


@given(st.lists(RECORDS, max_size=12), st.randoms(), st.integers(1, 4))
def test_merge_depends_on_the_records_not_on_batches_or_order(records, rng, kept) -> None:  # type: ignore[no-untyped-def]
    whole = merge([], records, kept=kept)
    shuffled = list(records)
    rng.shuffle(shuffled)
    cut = len(shuffled) // 2
    in_two = merge(merge([], shuffled[:cut], kept=kept), shuffled[cut:], kept=kept)
    assert len(whole) <= kept and len({r.session for r in whole}) == len(whole)
    assert merge(whole, records, kept=kept) == whole  # a replayed batch changes nothing
    if len({r.session for r in records}) <= kept:  # nothing dropped: any batching gives the same records
        assert in_two == whole


def test_a_turns_record_keeps_ids_only_bounded_and_needs_an_arm() -> None:
    many = [{"id": f"fix-{n:016x}", "surface": "harness"} for n in range(MAX_IDS + 5)]
    record = record_of(
        "p", "s" * 600, 7.0, {"arm": MEMORY, "injected": many, "followed": ["fix-0000000000000001", 3]}
    )
    assert record is not None and len(record.injected) == MAX_IDS and len(record.session) == 512
    assert record.followed == ("fix-0000000000000001",) and record.shown == record.injected
    assert (
        record_of("p", "s", 1.0, {"arm": "other"}) is None
        and record_of("p", "", 1.0, {"arm": MEMORY}) is None
    )
    assert from_json("p", to_json(record)) == record


def test_the_newest_sessions_are_kept() -> None:
    records = [SessionRecord("p", f"s{n}", MEMORY, float(n)) for n in range(KEPT + 3)]
    kept = merge([], records)
    assert len(kept) == KEPT and kept[0].session == f"s{KEPT + 2}" and "s0" not in {r.session for r in kept}


def test_a_session_known_only_from_its_record_counts_not_fixed_in_its_arm() -> None:
    held = SessionRecord("p", "s-held", HOLDBACK, 50.0, shadow=("fix-00000000000000aa",))
    late = SessionRecord("p", "s1", MEMORY, 300.0, injected=("fix-00000000000000bb",))
    entries = [entry(1, "s1", MEMORY, "fixed", ts=200.0)]
    assert [s.session for s in sessions_of(entries)] == ["s1"]  # the entries alone miss s-held
    found = {s.session: s for s in sessions_of(entries, records=[held, late])}
    assert (found["s-held"].arm, found["s-held"].fixed, found["s-held"].no_entry) == (HOLDBACK, False, True)
    assert found["s-held"].shown == ("fix-00000000000000aa",)
    s1 = found["s1"]  # its entry's outcome, its newest turn's time, the union of what it was shown
    assert (s1.fixed, s1.no_entry, s1.ts) == (True, False, 300.0)
    assert set(s1.shown) == {"fix-00000000000000aa", "fix-00000000000000bb"}
    assert [s.session for s in sessions_of(entries, records=[held, late], since=100.0)] == ["s1"]
    arms = report(list(found.values())).to_dict()["arms"]
    assert (arms[HOLDBACK]["sessions"], arms[HOLDBACK]["no_entry"], arms[HOLDBACK]["fixed"]) == (1, 1, 0)
    assert (arms[MEMORY]["no_entry"], arms[MEMORY]["no_entry_ratio"]) == (0, 0.0)


def test_the_file_is_sealed_and_a_damaged_one_is_set_aside(data_dir: Path) -> None:
    records = [SessionRecord("p", "s1", HOLDBACK, 1.0, shadow=("fix-00000000000000aa",))]
    data = encode("p", records)
    assert decode(data) == ("p", records)
    assert decode(data[:-3]) is None and decode(data.replace(b"s1", b"s2")) is None
    store = fix_store(data_dir)
    assert store.record_sessions("alice", "p", records) == 1
    [path] = data_dir.rglob("*.sessions.json")
    path.write_bytes(path.read_bytes()[:-5])  # damaged: read as none, kept aside at the next write
    assert store.sessions("alice", "p") == [] and store.session_projects("alice") == []
    assert store.record_sessions("alice", "p", [SessionRecord("p", "s2", MEMORY, 2.0)]) == 1
    assert path.with_name(path.name + ".damaged").exists()
    assert [r.session for r in store.sessions("alice", "p")] == ["s2"]
    assert store.session_projects("alice") == ["p"] and store.projects("alice") == []


def test_records_kept_in_memory_never_hide_what_another_writer_wrote(data_dir: Path) -> None:
    store = fix_store(data_dir)
    mine = [SessionRecord("p", f"s{n}", MEMORY, float(n)) for n in range(3)]
    assert store.record_sessions("alice", "p", mine) == 3  # written, and kept in memory
    [path] = data_dir.rglob("*.sessions.json")
    theirs = [dataclasses.replace(r, session=r.session.replace("s", "t")) for r in mine]  # the same length
    path.write_bytes(encode("p", theirs[::-1]))  # another process's atomic replace (newest first)
    assert [r.session for r in fix_store(data_dir).sessions("alice", "p")] == ["t2", "t1", "t0"]
    assert [r.session for r in store.sessions("alice", "p")] == ["t2", "t1", "t0"]
    assert store.record_sessions("alice", "p", mine) == 6  # joined into theirs, not into the kept ones


def test_threads_reading_and_writing_many_files_get_their_own_records(tmp_path: Path) -> None:
    paths = [tmp_path / f"p{n}.sessions.json" for n in range(CACHED_FILES * 2)]  # past the bound: evictions
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for round_ in range(3):
                for n, path in enumerate(paths[offset::4]):
                    mine = [SessionRecord("p", f"s{offset}-{n}-{round_}", MEMORY, float(round_))]
                    kept = join_into(path, "p", mine)
                    found = read_sessions(path)
                    assert found is not None and set(mine) <= set(found[1]) and found[1] == kept
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@given(RECORDS)
def test_a_record_reads_back_as_written(record: SessionRecord) -> None:
    assert from_json("p", to_json(record)) == record


def test_a_dropped_entrys_outcome_counts_and_the_newest_entry_decides() -> None:
    ended = Ended(150.0, "fix-0000000000000009", False, None, True)
    dropped = SessionRecord("p", "s-dropped", HOLDBACK, 150.0, ended=ended)
    (only,) = sessions_of([], records=[dropped])  # the log no longer holds its entry
    assert (only.fixed, only.claimed, only.verdict, only.no_entry) == (False, True, None, False)
    older = entry(1, "s1", MEMORY, "fixed", ts=100.0)  # rotation dropped s1's newer, unverified entry
    newer = SessionRecord(
        "p", "s1", MEMORY, 200.0, ended=Ended(200.0, "fix-0000000000000002", False, None, False)
    )
    (s1,) = sessions_of([older], records=[newer])
    assert (s1.fixed, s1.ts, s1.no_entry) == (False, 200.0, False)
    (kept,) = sessions_of([entry(3, "s1", MEMORY, "fixed", ts=300.0)], records=[newer])
    assert kept.fixed  # the log's newer entry wins


def test_rotation_keeps_the_sessions_of_the_entries_it_drops(data_dir: Path) -> None:
    store = fix_store(data_dir, cap=4, slack=0)
    old = [entry(n, f"s{n}", HOLDBACK, "unverified", ts=100.0 + n) for n in range(4)]
    new = [entry(n, f"s{n}", MEMORY, "fixed", ts=200.0 + n) for n in range(4, 8)]
    for batch in (old, new):
        store.append("alice", "p", [e.model_copy(update={"task": f"task {e.id}"}) for e in batch])
    entries = store.read("alice", "p").entries
    assert len(entries) == 4 and {e.outcome for e in entries} == {"fixed"}  # unverified dropped first
    assert len(sessions_of(entries)) == 4  # the log alone: every session fixed
    found = {s.session: s for s in sessions_of(entries, records=store.sessions("alice", "p"))}
    assert sorted(found) == [f"s{n}" for n in range(8)]
    assert [found[f"s{n}"].fixed for n in range(8)] == [False] * 4 + [True] * 4
    assert (found["s0"].arm, found["s0"].no_entry, found["s0"].claimed) == (HOLDBACK, False, False)
    [path] = data_dir.rglob("*.sessions.json")
    before = path.read_bytes()
    store.append("alice", "p", [e.model_copy(update={"task": f"task {e.id}"}) for e in old])  # a replay
    assert path.read_bytes() == before
