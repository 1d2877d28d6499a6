"""A file's record is also its checkpoint entry: it survives the round trip, or says read the file again."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.backfill.plan import NOT_A_LOG, skipped_unread
from ingest.backfill.records import FileRecord, FileStatus, Sent

_ids = st.from_regex(r"\A[0-9]{1,13}-[0-9]{1,4}\Z")
_texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
_records = st.builds(
    FileRecord,
    path=_texts,
    size=st.integers(0, 2**40),
    mtime_ns=st.integers(0, 2**62),
    status=st.sampled_from(FileStatus),
    format=st.none() | st.sampled_from(["aider", "codex"]),
    reason=_texts,
    turns=st.integers(0, 10_000),
    held_back=st.integers(0, 10_000),
    sent=st.lists(st.builds(Sent, _ids, _texts, _texts, _texts), max_size=5).map(tuple),
)


@given(_records)
def test_a_record_survives_the_checkpoint(record: FileRecord) -> None:
    back = FileRecord.from_json(record.path, record.to_json())
    assert back is not None and back.resumed
    assert back == FileRecord(**{**record.__dict__, "resumed": True})


@pytest.mark.parametrize("raw", [b"", b"{", b"[]", b'{"size": 1}', b'{"size": "x", "mtime_ns": 1}'])
def test_a_damaged_checkpoint_value_means_read_the_file_again(raw: bytes) -> None:
    assert FileRecord.from_json("/f", raw) is None


def test_a_record_matches_only_the_same_file() -> None:
    record = skipped_unread("/f", 10, 20, NOT_A_LOG)
    assert record.matches(10, 20)
    assert not record.matches(11, 20) and not record.matches(10, 21)
