"""Properties across the boundaries a hostile input crosses: stream entry -> consumer -> worker -> store.

The schema and the extractor have their own properties (tests/ingest/test_schema.py,
tests/workers/extraction/test_properties.py); these check what the pipeline does with what they return:

- the consumer's ``classify`` takes any stream entry (any fields, any bytes) to an accepted event or a
  refusal with a known reason and a message — it never raises;
- ``parse_event`` on corrupted wire bytes (truncated, a byte flipped, bytes inserted) raises only
  ``InvalidEvent``;
- any valid event, whatever its owner and project key (unicode, ``..``, ``/``, 4 kB, a URL with a
  token), is decided without raising, and its entry is storable: the store takes it, files it under
  ``fix_memory/<owner>/`` with a safe name, and gives it back by the same raw key.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.batching import Accepted, Refused, StreamEntry, classify
from ingest.errors import DeadLetterReason, InvalidEvent
from ingest.schema import parse_event
from tests.configs import fix_store
from tests.ingest.turns import turn
from workers.extraction import Limits
from workers.jobs import decide

REASONS = set(DeadLetterReason)
SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
FIELDS = st.dictionaries(
    st.sampled_from([b"event", b"evnet", b"", b"\x00", b"EVENT"]) | st.binary(max_size=8),
    st.binary(max_size=200) | st.builds(lambda i: orjson.dumps(turn(i)), st.integers(0, 50)),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(FIELDS, st.integers(1024, 1 << 20))
def test_classify_takes_any_stream_entry_to_an_answer(fields: dict[bytes, bytes], max_bytes: int) -> None:
    result = classify(StreamEntry("1-0", fields), max_bytes=max_bytes)
    if isinstance(result, Refused):
        assert result.reason in REASONS and result.message
    else:
        assert isinstance(result, Accepted) and result.owner and result.project_key


WIRE = orjson.dumps(turn(3, kind="partial"))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, len(WIRE)),
    st.integers(0, len(WIRE) - 1),
    st.integers(0, 255),
    st.binary(max_size=12),
    st.sampled_from(["truncate", "flip", "insert"]),
)
def test_corrupted_wire_bytes_raise_only_invalid_event(
    cut: int, at: int, byte: int, extra: bytes, how: str
) -> None:
    if how == "truncate":
        raw = WIRE[:cut]
    elif how == "flip":
        raw = WIRE[:at] + bytes([byte]) + WIRE[at + 1 :]
    else:
        raw = WIRE[:at] + extra + WIRE[at:]
    try:
        parse_event(raw)
    except InvalidEvent as exc:
        assert exc.reason in REASONS and exc.message


HOSTILE_NAMES = st.one_of(
    st.text(min_size=1, max_size=40).filter(lambda s: s.strip()),
    st.sampled_from(["..", ".", "/", "../../etc/passwd", "~", "a" * 4000, "é/ü/😀", "C:\\work\\app", " x "]),
    st.builds(
        lambda user, token, repo: f"https://{user}:{token}@gitlab.example.com/{repo}.git",
        st.text("abcdefgh-", min_size=1, max_size=12),
        st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789", min_size=8, max_size=40),
        st.text("abc/-_", min_size=1, max_size=20),
    ),
)
OWNERS = st.one_of(
    st.text(min_size=1, max_size=20).filter(lambda s: s.strip() and s not in {".", ".."} and "/" not in s
                                            and "\\" not in s),
    st.sampled_from(["alice", "Alice", "ålice", "a" * 256]),
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    OWNERS, HOSTILE_NAMES, st.sampled_from(["", "/work/widgets", "https://u:p4ssw0rd!@h/r", "relative/dir"])
)
def test_any_valid_event_is_decided_and_its_entry_is_storable(
    owner: str, project: str, workspace: str
) -> None:
    event: dict[str, Any] = turn(1, owner=owner, project=project)
    event["workspace"] = workspace
    raw = orjson.dumps(event)
    try:
        parse_event(raw)
    except InvalidEvent:
        return  # a name the schema refuses (control characters…): dead-lettered, covered above
    (decision,) = decide([("1-0", raw)], enabled=True, limits=Limits(), max_bytes=1 << 20)
    assert decision.dead is None, decision.error
    assert decision.entry is not None
    with tempfile.TemporaryDirectory() as tmp:
        store = fix_store(tmp)
        result = store.append(owner, project, [decision.entry])
        assert [e.id for e in result.added] == [decision.entry.id]
        files = [p.relative_to(tmp) for p in Path(tmp).rglob("*") if p.is_file()]
        assert files and all(
            len(f.parts) == 3 and f.parts[0] == "fix_memory" and all(SAFE.fullmatch(p) for p in f.parts)
            for f in files
        ), files
        assert [e.id for e in store.read(owner, project).entries] == [decision.entry.id]
