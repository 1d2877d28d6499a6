"""The log summary: the pure fold, and the file the store keeps beside each log (``summary_file``)."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from store import FixStore
from store.entry import OUTCOMES, FixEntry
from store.errors import StoreUnavailable
from store.paths import project_files
from store.persist import fixlog, fsio, summary_file
from store.persist.summary_file import read_summary
from store.summary import EMPTY_SUMMARY, LogSummary, day_of, summarize
from store.verdicts import Verdict
from tests.store.factories import OWNER, PROJECT, make_entry

DAY = 86_400.0
outcomes = st.sampled_from(OUTCOMES)


def _entry(n: int, outcome: str = "fixed", ts: float | None = None) -> FixEntry:
    return make_entry(n, f"task number {n} of the summary tests", outcome=outcome, ts=ts)  # type: ignore[arg-type]


def _store(root: Path, cap: int = 500) -> FixStore:
    return FixStore(root, cap=cap)


def _on_disk(store: FixStore) -> LogSummary | None:
    files = project_files(store.root, OWNER, PROJECT)
    found = read_summary(files.summary, files.log)
    return None if found is None else found[1]


def _as_stats(summary: LogSummary) -> tuple[object, ...]:
    return (
        summary.project,
        summary.total,
        summary.by_outcome,
        summary.ratios,
        summary.oldest_ts,
        summary.newest_ts,
    )


def _expected(store: FixStore) -> tuple[object, ...]:
    """What ``compute_stats`` says of the log (via ``FixStore.stats``), in the summary's terms."""
    stats = store.stats(OWNER, PROJECT)
    project = stats.project if stats.total else None
    return (project, stats.total, stats.by_outcome, stats.ratios, stats.oldest_ts, stats.newest_ts)


# -- pure ----------------------------------------------------------------------------------------------


@given(st.lists(st.tuples(st.floats(0, 2e9), outcomes), max_size=40), st.integers(0, 40))
def test_the_summary_of_a_grown_log_is_the_old_one_extended(pairs: list[tuple[float, str]], cut: int) -> None:
    entries = [_entry(i, o, ts) for i, (ts, o) in enumerate(pairs)]
    assert summarize(entries[:cut]).extended(entries[cut:]) == summarize(entries)
    whole = summarize(entries)
    assert whole.total == len(entries) == sum(whole.by_outcome.values()) == sum(map(sum, whole.days.values()))
    for day, counts in whole.days.items():
        assert dict(zip(OUTCOMES, counts, strict=True)) == {
            o: sum(1 for e in entries if day_of(e.ts) == day and e.outcome == o) for o in OUTCOMES
        }
    assert LogSummary.from_json(orjson.loads(orjson.dumps(whole.to_json()))) == whole


def test_the_summary_agrees_with_compute_stats(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(i, OUTCOMES[i % 3], 1e9 + i * DAY / 3) for i in range(10)])
    assert _as_stats(store.summary(OWNER, PROJECT)) == _expected(store)
    assert store.summary(OWNER, "no such project") == EMPTY_SUMMARY


@pytest.mark.parametrize(
    "bad",
    [b"", b"{", b"[]", b'{"v": 99}', b'{"v": 1, "log": {}, "summary": {}}'],
)
def test_anything_but_a_summary_file_is_refused(bad: bytes) -> None:
    assert summary_file.decode(bad) is None


def test_a_torn_or_interleaved_summary_file_fails_its_checksum() -> None:
    stamp = summary_file.Stamp(1, 2, 300, 4, 300, 10, "0" * 64)
    old = summary_file.encode(stamp, summarize([_entry(0, ts=1e9)]))
    new = summary_file.encode(stamp, summarize([_entry(0, ts=1e9), _entry(1, "partial", 2e9)]))
    assert summary_file.decode(new) is not None
    for bad in (
        new[:-1],
        new[: len(new) // 2],
        new[: len(old) // 2] + old[len(old) // 2 :],
        old + new[len(old) :],
    ):
        assert summary_file.decode(bad) is None
    flipped = new.replace(b'"total":2', b'"total":3')
    assert flipped != new and summary_file.decode(flipped) is None


# -- the file beside the log ---------------------------------------------------------------------------


def test_every_write_leaves_a_summary_file_that_matches_the_log(tmp_path: Path) -> None:
    store = _store(tmp_path, cap=6)
    store.append(
        OWNER, PROJECT, [_entry(i, "unverified" if i % 2 else "fixed", 1e9 + i * DAY) for i in range(4)]
    )
    assert _on_disk(store) is not None and _as_stats(_on_disk(store)) == _expected(store)  # type: ignore[arg-type]

    store.append(OWNER, PROJECT, [_entry(i, "partial", 1e9 + i * DAY) for i in range(4, 9)])  # rotates to 6
    assert len(store.read(OWNER, PROJECT).entries) == 6
    assert _as_stats(_on_disk(store)) == _expected(store)  # type: ignore[arg-type]

    target = store.read(OWNER, PROJECT).entries[0]
    store.apply_verdicts(OWNER, PROJECT, [Verdict(target.id, "ci", "partial", 2e9)])
    assert _on_disk(store).by_outcome["partial"] == 6  # type: ignore[union-attr]
    assert _as_stats(_on_disk(store)) == _expected(store)  # type: ignore[arg-type]

    assert store.forget(OWNER, target.id)
    assert _as_stats(_on_disk(store)) == _expected(store)  # type: ignore[arg-type]
    assert _on_disk(store).total == 5  # type: ignore[union-attr]


def test_a_log_changed_behind_the_summary_is_summarized_again(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(i, ts=1e9 + i) for i in range(3)])
    files = project_files(store.root, OWNER, PROJECT)
    before = files.summary.read_bytes()

    with files.log.open("ab") as log:  # another writer (an older version) appends, leaves the summary
        log.write(fixlog.encode_entry(_entry(3, "partial", 1e9 + 5 * DAY)))
    assert read_summary(files.summary, files.log) is None  # stale: not trusted
    for reader in (store, _store(tmp_path)):  # this process (its memory is stale too) and a fresh one
        summary = reader.summary(OWNER, PROJECT)
        assert summary.total == 4 and summary.by_outcome["partial"] == 1
        assert summary == summarize(reader.read(OWNER, PROJECT).entries)
    assert files.summary.read_bytes() != before and _on_disk(store) == summary  # written again

    # a line edited in place: the same inode, size and last line; the mtime tells
    lines = files.log.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"outcome":"fixed"', b'"outcome":"xxxxx"')
    os.utime(files.log, ns=(1, 1))
    files.log.write_bytes(b"".join(lines))
    fresh = _store(tmp_path)
    assert fresh.summary(OWNER, PROJECT).total == 3  # the edited line is no valid entry any more
    assert fresh.summary(OWNER, PROJECT) == summarize(fresh.read(OWNER, PROJECT).entries)


def test_a_missing_or_torn_summary_file_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(i, ts=1e9 + i) for i in range(3)])
    files = project_files(store.root, OWNER, PROJECT)
    expected = summarize(store.read(OWNER, PROJECT).entries)
    for damage in (files.summary.unlink, lambda: files.summary.write_bytes(b'{"v": 1, "log": {"dev"')):
        damage()
        assert _store(tmp_path).summaries(OWNER) == [expected]  # an old data directory: no file yet
        assert _on_disk(store) == expected


def test_a_failing_summary_write_never_fails_the_log_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(0, ts=1e9)])
    files = project_files(store.root, OWNER, PROJECT)
    assert files.summary.exists()

    def full_disk(*_: object) -> None:
        raise StoreUnavailable(f"no space left on device: {files.summary}")

    monkeypatch.setattr("store.api.summaries.write_summary", full_disk)
    with caplog.at_level(logging.WARNING, logger="store.api"):
        result = store.append(OWNER, PROJECT, [_entry(1, "partial", 1e9 + DAY)])
    assert [e.id for e in result.added] == [_entry(1).id]
    assert not files.summary.exists()  # removed, not left stale
    assert "could not write" in caplog.text
    monkeypatch.undo()
    assert _store(tmp_path).summary(OWNER, PROJECT).total == 2  # summarized from the log, written again
    assert _on_disk(store) is not None

    def broken(*_: object) -> LogSummary:
        raise RuntimeError("a bug in the summary")

    monkeypatch.setattr("store.api.appending.summarize", broken)
    monkeypatch.setattr(LogSummary, "extended", broken)
    store.append(OWNER, PROJECT, [_entry(2, ts=1e9 + 2 * DAY)])
    assert len(store.read(OWNER, PROJECT).entries) == 3 and not files.summary.exists()


def test_projects_come_from_the_summaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(0)])
    store.append(OWNER, "/srv/other", [make_entry(1, "other", project="/srv/other")])

    def no_parse(*_: object) -> None:
        raise AssertionError("a log was parsed")

    monkeypatch.setattr("store.persist.fixlog.read_snapshot", no_parse)
    assert _store(tmp_path).projects(OWNER) == sorted([PROJECT, "/srv/other"])


def test_the_listing_fixmem_projects_and_the_api_give_reads_no_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fixmem projects`` and ``GET /api/projects`` list ``summaries``: the same figures as the stats
    of the parsed logs, with no log parsed while the summary files hold."""
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(0), _entry(1, "partial", 2e9)])
    store.append(OWNER, "/srv/other", [make_entry(2, "other", project="/srv/other", outcome="unverified")])
    stats = [
        (s.project, s.total, s.by_outcome, s.ratios, s.oldest_ts, s.newest_ts)
        for s in store.project_stats(OWNER)
    ]

    def no_parse(*_: object) -> None:
        raise AssertionError("a log was parsed")

    monkeypatch.setattr("store.persist.fixlog.read_snapshot", no_parse)
    listed = _store(tmp_path).summaries(OWNER)
    assert [(s.project, s.total, s.by_outcome, s.ratios, s.oldest_ts, s.newest_ts) for s in listed] == stats


# -- any sequence of writes ----------------------------------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.lists(st.tuples(st.integers(0, 30), outcomes, st.integers(0, 9)), max_size=5),
        ),
        st.tuples(
            st.just("verdict"), st.integers(0, 30), outcomes, st.sampled_from(("review", "ci", "merged"))
        ),
        st.tuples(st.just("forget"), st.integers(0, 30)),
        st.tuples(st.just("behind"), st.integers(0, 30), outcomes),  # a write that skips the summary
    ),
    max_size=8,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.integers(2, 6))
@example([("append", [(0, "fixed", 0)]), ("behind", 0, "fixed"), ("behind", 0, "partial")], 2)
def test_after_any_writes_the_summary_is_the_logs(ops: list[tuple], cap: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(Path(tmp), cap=cap)
        files = project_files(store.root, OWNER, PROJECT)
        for op in ops:
            if op[0] == "append":
                store.append(OWNER, PROJECT, [_entry(n, o, 1e9 + d * DAY + n) for n, o, d in op[1]])
            elif op[0] == "verdict":
                store.apply_verdicts(OWNER, PROJECT, [Verdict(_entry(op[1]).id, op[3], op[2], 2e9 + op[1])])
            elif op[0] == "forget":
                store.forget(OWNER, _entry(op[1]).id)
            elif files.log.exists():
                with files.log.open("ab") as log:
                    log.write(fixlog.encode_entry(_entry(100 + op[1], op[2], 1e9 + op[1] * DAY)))
            entries = store.read(OWNER, PROJECT).entries
            assert store.summary(OWNER, PROJECT) == summarize(entries)
            assert _store(Path(tmp), cap=cap).summary(OWNER, PROJECT) == summarize(entries)
            if files.log.exists():
                assert _on_disk(store) == summarize(entries)  # written by the writer, or again by a reader
                assert (_on_disk(store).claimed, _on_disk(store).verified) == _recount(
                    files.log, {e.id for e in entries}
                )  # type: ignore[union-attr]


def _recount(log: Path, ids: set[str] | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """Claimed and verified counts read from the log's lines as JSON, without the store's code (of the
    lines with ``ids`` only: a line written behind the store past the cap is not kept). A later line with
    an id already seen is a bad line to the store (``fixlog``: the first wins), so it counts once here."""
    claimed, verified = dict.fromkeys(OUTCOMES, 0), dict.fromkeys(OUTCOMES, 0)
    seen: set[str] = set()
    for line in log.read_bytes().splitlines():
        row = orjson.loads(line)
        if (ids is not None and row["id"] not in ids) or row["id"] in seen:
            continue
        seen.add(row["id"])
        claimed[row.get("agent_outcome") or row["outcome"]] += 1
        if isinstance(row.get("verdict"), dict):
            verified[row["outcome"]] += 1
    return claimed, verified


def test_claimed_and_verified_follow_verdicts_that_replace_each_other(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(i, "fixed", 1e9 + i) for i in range(4)])
    one, two = (_entry(i).id for i in range(2))
    store.apply_verdicts(
        OWNER, PROJECT, [Verdict(one, "merged", "fixed", 2e9), Verdict(two, "ci", "fixed", 2e9)]
    )
    s = store.summary(OWNER, PROJECT)
    assert (s.claimed["fixed"], s.verified, s.coverage, s.fixed_claimed, s.fixed_verified) == (
        4, {"fixed": 2, "partial": 0, "unverified": 0}, 0.5, 1.0, 1.0,
    )  # fmt: skip
    store.apply_verdicts(OWNER, PROJECT, [Verdict(one, "revert", "partial", 2e9 + 5)])  # fixed -> partial
    s = store.summary(OWNER, PROJECT)
    assert (s.claimed["fixed"], s.verified["fixed"], s.verified["partial"], s.fixed_verified) == (
        4,
        1,
        1,
        0.5,
    )
    assert store.forget(OWNER, one)
    s = store.summary(OWNER, PROJECT)
    assert (s.total, s.claimed["fixed"], s.verified["partial"], s.coverage) == (3, 3, 0, 1 / 3)
    assert (s.claimed, s.verified) == _recount(project_files(store.root, OWNER, PROJECT).log)


def test_a_summary_file_without_claimed_counts_is_summarized_again(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(OWNER, PROJECT, [_entry(0, "partial", 1e9)])
    store.apply_verdicts(OWNER, PROJECT, [Verdict(_entry(0).id, "ci", "fixed", 2e9)])
    files = project_files(store.root, OWNER, PROJECT)
    stamp, summary = summary_file.decode(files.summary.read_bytes())  # type: ignore[misc]
    old = summary.to_json()
    del old["claimed"], old["verified"]  # what a build before issue 30 wrote
    body = {
        "v": summary_file.VERSION,
        "log": orjson.loads(summary_file._body(stamp, summary))["log"],
        "summary": old,
    }
    files.summary.write_bytes(fsio.seal(orjson.dumps(body)))
    assert summary_file.decode(files.summary.read_bytes()) is None
    fresh = _store(tmp_path).summary(OWNER, PROJECT)
    assert (fresh.claimed["partial"], fresh.verified["fixed"]) == (1, 1)
