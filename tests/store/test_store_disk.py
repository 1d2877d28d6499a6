"""The log on disk (real files in tmp_path): torn tails, malformed lines, the index, byte-exact rewrites."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import orjson

from store import FixStore
from store.paths import ProjectFiles, project_files
from store.persist import fixlog, fsio
from store.persist.fsio import seal, unseal
from store.recall.index import build_index
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry


def _files(data_dir: Path) -> ProjectFiles:
    return project_files(data_dir / "fix_memory", OWNER, PROJECT)


def _quarantined(data_dir: Path) -> list[dict]:  # type: ignore[type-arg]
    path = _files(data_dir).quarantine
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def test_a_torn_last_line_is_ignored_by_readers_and_quarantined_by_the_next_writer(data_dir: Path) -> None:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [make_entry(i, f"task {i}") for i in range(3)])
    log = _files(data_dir).log
    torn = b'{"id": "fix-0123456789abcdef", "ts": 1.0, "proj'
    with log.open("ab") as f:
        f.write(torn)
    before = log.read_bytes()

    result = fix_store(data_dir).read(OWNER, PROJECT)  # a reader: may be a write in progress
    assert len(result.entries) == 3 and result.malformed == [] and result.incomplete_tail
    assert fix_store(data_dir).stats(OWNER, PROJECT).malformed == 0
    assert log.read_bytes() == before  # readers never modify

    appended = fix_store(data_dir).append(OWNER, PROJECT, [make_entry(9, "task 9")])
    assert appended.quarantined == 1
    assert log.read_bytes().endswith(b"\n")
    assert [e.task for e in fix_store(data_dir).read(OWNER, PROJECT).entries] == [
        "task 0", "task 1", "task 2", "task 9",
    ]  # fmt: skip
    (record,) = _quarantined(data_dir)
    assert record["line"] == torn.decode() and record["line_no"] == 4
    assert record["reason"].startswith("torn last line") and record["source"] == log.name


def test_a_complete_entry_missing_only_its_newline_is_kept(data_dir: Path) -> None:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [make_entry(1, "first")])
    log = _files(data_dir).log
    with log.open("ab") as f:
        f.write(orjson.dumps(make_entry(2, "second").model_dump(mode="json")))
    result = fix_store(data_dir).append(OWNER, PROJECT, [make_entry(3, "third")])
    assert result.quarantined == 0
    assert [e.task for e in fix_store(data_dir).read(OWNER, PROJECT).entries] == ["first", "second", "third"]


def _write_lines(data_dir: Path, lines: list[bytes]) -> Path:
    files = _files(data_dir)
    files.directory.mkdir(parents=True)
    files.log.write_bytes(b"".join(line + b"\n" for line in lines))
    return files.log


def _line(n: int, task: str, **extra: object) -> bytes:
    return orjson.dumps({**make_entry(n, task).model_dump(mode="json"), **extra})


def test_malformed_lines_are_reported_kept_on_append_and_quarantined_on_rewrite(data_dir: Path) -> None:
    good = [_line(i, f"task {i}") for i in range(4)]
    log = _write_lines(
        data_dir,
        [good[0], b"not json at all", good[1], b'{"id": "bad"}', b"[1, 2]", good[2], b"", good[0], good[3]],
    )
    store = fix_store(data_dir)
    result = store.read(OWNER, PROJECT)
    assert [e.task for e in result.entries] == ["task 0", "task 1", "task 2", "task 3"]
    reasons = {m.line_no: m.reason for m in result.malformed}
    assert sorted(reasons) == [2, 4, 5, 8]  # line 7 is blank: not an entry, not an error
    assert reasons[2].startswith("invalid JSON")
    assert reasons[4].startswith("invalid entry: id:")
    assert reasons[5] == "not a JSON object (a list)"
    assert reasons[8].startswith("duplicate id")
    assert store.stats(OWNER, PROJECT).malformed == 4

    store.append(OWNER, PROJECT, [make_entry(10, "task 10")])
    assert b"not json at all" in log.read_bytes()  # an append never drops them

    assert store.forget(OWNER, make_entry(1).id)  # a rewrite moves them out, with their reasons
    assert b"not json at all" not in log.read_bytes()
    moved = {r["line_no"]: r for r in _quarantined(data_dir)}
    assert sorted(moved) == [2, 4, 5, 8]
    assert moved[2]["line"] == "not json at all" and moved[4]["line"] == '{"id": "bad"}'
    assert store.read(OWNER, PROJECT).malformed == []
    assert [e.task for e in store.read(OWNER, PROJECT).entries] == ["task 0", "task 2", "task 3", "task 10"]


def test_invalid_utf8_is_quarantined_losslessly(data_dir: Path) -> None:
    raw = b'{"task": "\xff\xfe broken"}'
    _write_lines(data_dir, [_line(1, "task 1"), raw, _line(2, "task 2")])
    store = fix_store(data_dir)
    assert [m.line_no for m in store.read(OWNER, PROJECT).malformed] == [2]
    store.forget(OWNER, make_entry(2).id)
    (record,) = _quarantined(data_dir)
    assert base64.b64decode(record["line_b64"]) == raw


def test_rewrites_keep_other_lines_byte_for_byte_with_unknown_fields(data_dir: Path) -> None:
    odd = b'{"reviewer":"carol", ' + _line(1, "task 1")[1:]  # unknown field first, another key order
    log = _write_lines(data_dir, [odd, _line(2, "task 2"), _line(3, "task 3", tool_version=[1, 2])])
    store = fix_store(data_dir)
    assert store.forget(OWNER, make_entry(2).id)
    lines = log.read_bytes().splitlines()
    assert lines == [odd, _line(3, "task 3", tool_version=[1, 2])]
    assert store.read(OWNER, PROJECT).entries[0].model_dump()["reviewer"] == "carol"


def test_the_index_is_refreshed_after_every_write(data_dir: Path) -> None:
    store = FixStore(data_dir, cap=3)
    index = _files(data_dir).index

    def on_disk() -> object:
        return fixlog.read_index(index)

    store.append(OWNER, PROJECT, [make_entry(1, "login timeout"), make_entry(2, "pool exhausted")])
    assert on_disk() == build_index(store.read(OWNER, PROJECT).entries)
    store.append(OWNER, PROJECT, [make_entry(3, "cache stale"), make_entry(4, "parser crash")])  # rotates
    assert (
        on_disk()
        == build_index(store.read(OWNER, PROJECT).entries)
        == build_index(
            [make_entry(2, "pool exhausted"), make_entry(3, "cache stale"), make_entry(4, "parser crash")]
        )
    )
    store.forget(OWNER, make_entry(4).id)  # shorter than the file it overwrites in place
    assert (
        on_disk()
        == build_index(store.read(OWNER, PROJECT).entries)
        == build_index([make_entry(2, "pool exhausted"), make_entry(3, "cache stale")])
    )


def test_recall_reads_the_index_when_it_matches_the_log(data_dir: Path) -> None:
    store = fix_store(data_dir)
    entry = make_entry(1, "login timeout")
    store.append(OWNER, PROJECT, [entry])
    index = _files(data_dir).index
    # Same ids, other keywords: a store that reads the index finds the entry by them.
    fixlog.write_index(index, orjson.dumps({entry.id: ["zanzibar", "quokka"]}))
    hits = fix_store(data_dir).recall(OWNER, PROJECT, "zanzibar quokka")
    assert [h.entry.id for h in hits] == [entry.id]


def _json_load(path: Path) -> object:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def test_the_index_file_is_plain_json_with_its_seal_beside_it(data_dir: Path) -> None:
    store = fix_store(data_dir)
    entries = [make_entry(1, "login timeout"), make_entry(2, "database pool exhausted")]
    store.append(OWNER, PROJECT, entries)
    files = _files(data_dir)
    assert _json_load(files.index) == build_index(entries)  # the contract: {id: [keywords...]}
    digest, name = files.index_seal.read_text().split()  # sha256sum's line: `sha256sum -c` checks it
    assert digest == hashlib.sha256(files.index.read_bytes()).hexdigest() and name == files.index.name
    store.forget(OWNER, entries[1].id)  # a shorter index, overwritten in place
    assert _json_load(files.index) == build_index(entries[:1])


def test_an_older_versions_sealed_index_is_rebuilt_as_plain_json(data_dir: Path) -> None:
    entries = [make_entry(1, "login timeout"), make_entry(2, "database pool exhausted")]
    fix_store(data_dir).append(OWNER, PROJECT, entries)
    files = _files(data_dir)
    # What a store of the previous version left: the body, then its sha256 on a line, and no seal file.
    files.index.write_bytes(seal(orjson.dumps(build_index(entries))))
    files.index_seal.unlink()
    assert fixlog.read_index(files.index) is None  # not vouched for: not trusted
    fresh = fix_store(data_dir)
    assert [h.entry.id for h in fresh.recall(OWNER, PROJECT, "login timeout")] == [entries[0].id]
    assert _json_load(files.index) == build_index(entries)  # the first read rebuilt it
    assert fixlog.read_index(files.index) == build_index(entries)


def test_an_older_reader_finds_the_new_index_unsealed(data_dir: Path) -> None:
    """A store of the previous version reads the index with ``unseal``: the plain file fails it (a JSON
    object never ends in a digest line), so that reader rebuilds its keywords from the log in memory."""
    fix_store(data_dir).append(OWNER, PROJECT, [make_entry(1, "login timeout")])
    assert unseal(_files(data_dir).index.read_bytes()) is None


def test_a_missing_or_inconsistent_index_is_rebuilt_from_the_log(data_dir: Path) -> None:
    store = fix_store(data_dir)
    entries = [make_entry(1, "login timeout"), make_entry(2, "database pool exhausted")]
    store.append(OWNER, PROJECT, entries)
    index = _files(data_dir).index
    expected = [h.entry.id for h in fix_store(data_dir).recall(OWNER, PROJECT, "login timeout")]
    assert expected == [entries[0].id]

    stale = orjson.dumps({entries[0].id: ["zanzibar"], entries[1].id: ["zanzibar"]})
    other_ids = orjson.dumps({entries[0].id: ["zanzibar"]})
    broken_ones = (
        (None, False),  # no index file
        (stale, False),  # a hand edit: the seal file names other bytes
        (stale[:-10], True),  # an overwrite in place cut short, its seal written
        (b"{not json", True),
        (other_ids, True),  # not the log's ids
        (orjson.dumps([1, 2]), True),
        (seal(stale), False),  # an older version's sealed index
    )
    for broken, sealed in broken_ones:
        if broken is None:
            index.unlink()
        elif sealed:
            fsio.overwrite_with_seal(index, broken)
        else:
            index.write_bytes(broken)
        fresh = fix_store(data_dir)
        assert [h.entry.id for h in fresh.recall(OWNER, PROJECT, "login timeout")] == expected
        assert fresh.recall(OWNER, PROJECT, "zanzibar") == []  # the stale keyword is not trusted
        assert fixlog.read_index(index) == build_index(entries)  # rebuilt by that first read
        fresh.repair(OWNER, PROJECT)
        assert fixlog.read_index(index) == build_index(entries)


def test_a_reader_that_cannot_rebuild_the_index_still_answers(data_dir: Path) -> None:
    entries = [make_entry(1, "login timeout")]
    fix_store(data_dir).append(OWNER, PROJECT, entries)
    files = _files(data_dir)
    files.index_seal.unlink()
    files.index_seal.mkdir()  # the seal cannot be written: the rebuild fails, the read does not
    hits = fix_store(data_dir).recall(OWNER, PROJECT, "login timeout")
    assert [h.entry.id for h in hits] == [entries[0].id]


def test_a_second_store_sees_every_change_of_the_first(data_dir: Path) -> None:
    writer, reader = fix_store(data_dir), fix_store(data_dir)
    assert reader.read(OWNER, PROJECT).entries == []
    writer.append(OWNER, PROJECT, [make_entry(1, "login timeout")])
    assert len(reader.read(OWNER, PROJECT).entries) == 1
    assert reader.recall(OWNER, PROJECT, "login timeout")
    writer.append(OWNER, PROJECT, [make_entry(2, "pool exhausted")])  # grows: parsed incrementally
    assert [e.task for e in reader.read(OWNER, PROJECT).entries] == ["login timeout", "pool exhausted"]
    assert reader.recall(OWNER, PROJECT, "pool exhausted")[0].entry.id == make_entry(2).id
    writer.forget(OWNER, make_entry(1).id)  # rewritten: a new file
    assert [e.task for e in reader.read(OWNER, PROJECT).entries] == ["pool exhausted"]
    assert reader.recall(OWNER, PROJECT, "login timeout") == []
    # the reader's cache is re-validated by the writer side too
    reader.append(OWNER, PROJECT, [make_entry(3, "cache stale")])
    assert len(writer.read(OWNER, PROJECT).entries) == 2


def test_a_cached_snapshot_is_not_taken_for_a_rewritten_log_on_the_same_inode(tmp_path: Path) -> None:
    """Another writer's rotation renames a new file over the log, and the kernel may give it the inode
    number of a file freed earlier: the cache must not read such a log as its own plus new lines. Here the
    rewrite is made in place (same inode, for certain), dropping the first entry and adding two, so the
    file is longer than the cached part. Every line ends with the same bytes (``..., "changes": null}``),
    which is what once let a fixed 64-byte probe pass and a rotated entry be dropped twice."""
    log = tmp_path / "log.jsonl"
    first = [make_entry(n, f"task {n}") for n in range(3)]
    log.write_bytes(b"".join(fixlog.encode_entry(e) for e in first))
    cached, _ = fixlog.read_snapshot(log)
    rotated = [*first[1:], make_entry(3, "task 3"), make_entry(4, "task 4")]
    with log.open("r+b") as f:  # in place: the inode stays
        f.write(b"".join(fixlog.encode_entry(e) for e in rotated))
    assert log.stat().st_size > cached.complete_len
    snapshot, extends = fixlog.read_snapshot(log, cached)
    assert not extends
    assert [e.id for e in snapshot.entries] == [e.id for e in rotated]
