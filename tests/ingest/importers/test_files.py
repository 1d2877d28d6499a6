"""The file shell: bad files become error results (never exceptions), ids are stable, walks are sorted."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.importers import FORMATS, PARSERS, UnreadableLog, detect_format, import_file, iter_files
from ingest.schema import DEFAULT_MAX_EVENT_BYTES, validate_event
from tests.ingest.importers.support import FIXTURES

LOGS = [
    "mini-swe-agent/django__django-16255.traj.json",
    "swe-agent/marshmallow-code__marshmallow-1867.traj",
    "openhands/multi_swe_bench_example/output.jsonl",
    "openhands/runtime_trajs/basic_gui_mode.json",
    "claude-code/-home-dev-src-invoicer/5f0c7a52-3d3e-4b8e-9a51-0d2f6c1e9b47.jsonl",
    "aider/add-test.md",
    "codex/handwritten/rollout-2025-09-20T08-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
]


def test_formats_are_the_published_names() -> None:
    assert FORMATS == ("events", "mini-swe-agent", "swe-agent", "openhands", "claude-code", "aider", "codex")


@pytest.mark.parametrize("relative", LOGS)
def test_reimporting_yields_identical_events(relative: str, tmp_path: Path) -> None:
    first = import_file(FIXTURES / relative, owner="o")
    second = import_file(FIXTURES / relative, owner="o")
    assert first.events and [e.to_wire() for e in first.events] == [e.to_wire() for e in second.events]
    ids = [e.event_id for e in first.events]
    assert len(set(ids)) == len(ids) and all(i.startswith("bf-") and len(i) == 35 for i in ids)
    # a copy elsewhere is the same log: the identity is the log's own session / instance id, else the
    # turn's content — never a path (an Aider history's workspace is its folder: not part of the id either)
    copy = tmp_path / "elsewhere" / relative
    shutil.copytree((FIXTURES / relative).parent, copy.parent)
    pinned = import_file(FIXTURES / relative, owner="o", project="p")
    moved = import_file(copy, owner="o", project="p")
    assert [e.event_id for e in moved.events] == [e.event_id for e in pinned.events]
    assert [e.event_id for e in import_file(copy, owner="o").events] == ids


def test_ids_change_with_content_and_owner(tmp_path: Path) -> None:
    path = FIXTURES / "mini-swe-agent/django__django-16255.traj.json"
    base = import_file(path, owner="o").events[0]
    assert import_file(path, owner="someone").events[0].event_id != base.event_id
    doc = orjson.loads(path.read_bytes())
    doc["messages"][-1]["content"] += "\n"
    edited = tmp_path / path.name
    edited.write_bytes(orjson.dumps(doc))
    assert import_file(edited, owner="o").events[0].event_id != base.event_id


@pytest.mark.parametrize(
    ("name", "data", "fmt", "message"),
    [
        ("empty.jsonl", b"", "auto", "empty file"),
        ("blank.traj", b" \n\n", "auto", "empty file"),
        ("binary.bin", bytes(range(256)) * 4, "auto", "unrecognized format"),
        ("garbage.json", b'{"hello": "world"}', "auto", "unrecognized format"),
        (
            "truncated.traj.json",
            b'{"info": {"mini_version": "1"}, "messages": [{"role": "user", "con',
            "auto",
            "not valid JSON",
        ),
        ("wrong.traj", b'{"trajectory": 5}', "swe-agent", "trajectory array"),
        (
            "torn.jsonl",
            b'{"v": 1, "ts": 1.0, "owner": "a", "project_key": "p"}\n{"v": 1, "ts"',
            "auto",
            "line 2",
        ),
        ("oh.jsonl", b'{"instance_id": "a__b-1", "history": "nope"}\n', "openhands", "history"),
        ("list.json", b"[1, 2]", "openhands", "array of event objects"),
        ("text.md", b"\xff\xfe#### not utf-8 \x00\x00", "aider", None),
    ],
)
def test_bad_files_give_an_error_result(
    name: str, data: bytes, fmt: str, message: str | None, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    result = import_file(path, format=fmt, owner="o")
    if message is None:  # undecodable bytes are replaced: aider finds one request, or nothing
        assert result.error is None or result.events == []
    else:
        assert result.error is not None and message in result.error, result.error


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    result = import_file(tmp_path / "nope.jsonl", owner="o")
    assert result.events == [] and result.error is not None and result.error.startswith("cannot read file")
    with pytest.raises(ValueError, match="unknown format 'cursor'"):
        import_file(tmp_path / "nope.jsonl", format="cursor", owner="o")


def test_an_invalid_owner_is_an_error_result_not_an_exception() -> None:
    result = import_file(FIXTURES / "aider/add-test.md", owner="a/b")
    assert result.events == [] and result.error is not None and "owner" in result.error


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2048), fmt=st.sampled_from(("auto", *FORMATS)))
def test_arbitrary_bytes_never_raise(data: bytes, fmt: str, tmp_path: Path) -> None:
    path = tmp_path / "fuzz.log"
    path.write_bytes(data)
    result = import_file(path, format=fmt, owner="o")
    assert result.path == path
    if result.format is None:  # nothing recognized: no events, and it says why
        assert result.events == [] and result.error
    else:
        assert fmt in ("auto", result.format)
    for event in result.events:  # whatever was read is a valid v1 turn of the owner asked for
        assert event.owner == "o"
        assert validate_event(orjson.loads(event.model_dump_json())) == event


# keys the parsers look for, so generated documents reach deep into them
KEYS = [
    "type", "role", "content", "messages", "history", "trajectory", "action", "observation", "args", "id",
    "cause", "payload", "message", "tool_use_id", "name", "input", "timestamp", "info", "state", "extras",
    "call_id", "output", "arguments", "isSidechain", "sessionId", "uuid", "instance_id", "issue",
]  # fmt: skip
JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=6),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=JSONISH, fmt=st.sampled_from(("auto", *FORMATS)), lines=st.booleans())
def test_arbitrary_json_shapes_never_raise(doc: object, fmt: str, lines: bool, tmp_path: Path) -> None:
    path = tmp_path / "fuzz.json"
    body = orjson.dumps(doc)
    path.write_bytes(body + b"\n" + body if lines else body)
    result = import_file(path, format=fmt, owner="o")
    for event in result.events:
        assert len(event.to_wire()) <= DEFAULT_MAX_EVENT_BYTES


def test_iter_files_walks_sorted_once_and_skips_vcs(tmp_path: Path) -> None:
    for name in (
        "b/2.jsonl",
        "a/1.traj",
        "a/.aider.chat.history.md",
        ".git/objects/x",
        "b/node_modules/y.json",
        "c.md",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    found = list(iter_files([tmp_path / "b", tmp_path, tmp_path / "c.md", tmp_path / "missing"]))
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a/.aider.chat.history.md",
        "a/1.traj",
        "b/2.jsonl",
        "c.md",
    ]


def test_backfill_over_the_fixture_folder_reads_every_log() -> None:
    results = [import_file(p, owner="o") for p in iter_files([FIXTURES])]
    by_format: dict[str | None, int] = {}
    for result in results:
        by_format[result.format] = by_format.get(result.format, 0) + len(result.events)
        if result.format is not None:
            assert result.error is None, (result.path, result.error)
    assert by_format["claude-code"] == 3 and by_format["aider"] == 6 and by_format["codex"] == 3
    assert by_format["swe-agent"] == 3 and by_format["openhands"] == 5
    assert by_format["mini-swe-agent"] >= 2  # other parts may add trajectories to this folder


@settings(max_examples=300, deadline=None)
@given(doc=JSONISH, fmt=st.sampled_from(FORMATS), lines=st.booleans())
def test_parsers_refuse_malformed_logs_only_with_unreadable_log(doc: object, fmt: str, lines: bool) -> None:
    """``import_file``'s catch-all is a last resort: the parsers raise nothing but UnreadableLog."""
    body = orjson.dumps(doc)
    data = body + b"\n" + body if lines else body
    with contextlib.suppress(UnreadableLog):
        PARSERS[fmt](data, source="fuzz.log", owner="o")


@settings(max_examples=300, deadline=None)
@given(doc=JSONISH, lines=st.booleans())
def test_detection_never_raises(doc: object, lines: bool) -> None:
    body = orjson.dumps(doc)
    assert detect_format(Path("x.jsonl"), body + b"\n" + body if lines else body) in (None, *FORMATS)


UNDATED_LOGS = [
    "aider/add-test.md",
    "openhands/resolver_mock_output/output.jsonl",
    "swe-agent/swe-agent__test-repo-i1.traj",
]


@pytest.mark.parametrize("relative", UNDATED_LOGS)
def test_turns_without_a_time_get_the_file_mtime_and_keep_their_ids(relative: str, tmp_path: Path) -> None:
    """A log without times used to date its turns 2000-01-01 (UNDATED_EPOCH + turn): recency ranking and
    --since then treated a log written today as 26 years old. The fallback is the file's mtime; the ids
    must not follow the mtime, or re-running a backfill over a touched file would record every turn again."""
    copy = tmp_path / relative
    copy.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / relative, copy)
    runs = []
    for mtime in (1_750_000_000.0, 1_760_000_000.5):
        os.utime(copy, (mtime, mtime))
        result = import_file(copy, owner="o")
        assert result.events and result.error is None
        assert all((e.harness_meta.model_extra or {}).get("ts_derived") for e in result.events)
        turns = [e.harness_meta.turn or 0 for e in result.events]
        assert [e.ts for e in result.events] == [mtime - (max(turns) - t) for t in turns]
        runs.append(result.events)
    first, second = runs
    assert [e.event_id for e in first] == [e.event_id for e in second]


def test_dated_turns_and_our_own_events_keep_their_times(tmp_path: Path) -> None:
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(FIXTURES / LOGS[4], copy)  # Claude Code: every record has a timestamp
    os.utime(copy, (1_750_000_000, 1_750_000_000))
    dated = import_file(copy, owner="o").events
    assert dated and all(e.ts < 1_750_000_000 for e in dated)
    own = tmp_path / "events.jsonl"
    wire = orjson.loads(dated[0].to_wire())
    wire.update(ts=946684800.0, harness_meta={**wire["harness_meta"], "ts_derived": True})
    own.write_bytes(orjson.dumps(wire) + b"\n")
    assert [e.ts for e in import_file(own, owner="o", format="events").events] == [946684800.0]


def test_a_turn_keyed_by_its_workspace_gets_the_checkouts_remote_and_keeps_its_id(tmp_path: Path) -> None:
    checkout, plain = tmp_path / "widgets", tmp_path / "plain"
    for folder in (checkout, plain):
        folder.mkdir()
        shutil.copy(FIXTURES / "aider" / "add-test.md", folder / ".aider.chat.history.md")
    (checkout / ".git").mkdir()
    (checkout / ".git" / "config").write_text('[remote "origin"]\n\turl = git@GitHub.com:acme/widgets.git\n')
    keyed = import_file(checkout / ".aider.chat.history.md", owner="o").events
    unkeyed = import_file(plain / ".aider.chat.history.md", owner="o").events
    assert {e.project_key for e in keyed} == {"github.com/acme/widgets"}  # the repository, not the folder
    assert {e.project_key for e in unkeyed} == {plain.as_posix()}
    assert [e.event_id for e in keyed] == [e.event_id for e in unkeyed]
    pinned = import_file(checkout / ".aider.chat.history.md", owner="o", project="p").events
    assert {e.project_key for e in pinned} == {"p"}
