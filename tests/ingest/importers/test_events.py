"""Our own JSON-lines event dumps: checked like the stream, bad lines reported, good ones kept."""

from __future__ import annotations

from pathlib import Path

import orjson

from ingest.importers import import_file

EVENT = {
    "v": 1,
    "ts": 1732450000.0,
    "owner": "alice",
    "project_key": "/home/u/app",
    "user_message": "fix login",
    "tool_events": [
        {"tool": "bash", "input": {"command": "pytest -q"}, "output": "1 passed", "exit_code": 0}
    ],
}


def test_events_keep_their_owner_and_id_and_bad_lines_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [
        orjson.dumps(EVENT),
        b"",
        orjson.dumps({**EVENT, "event_id": "turn-7"}),
        b"{oops",
        orjson.dumps({**EVENT, "v": 2}),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = import_file(path, owner="someone-else", project="app")
    assert result.format == "events"
    assert [e.owner for e in result.events] == ["alice", "alice"]
    assert result.events[1].event_id == "turn-7" and result.events[0].event_id.startswith("ev-")
    assert {e.project_key for e in result.events} == {"app"}
    assert result.error is not None
    assert "line 4: invalid_json" in result.error and "line 5: unsupported_version" in result.error


def test_round_trip_of_imported_events(tmp_path: Path) -> None:
    """Events written by an importer read back unchanged through the events format."""
    source = tmp_path / "s.jsonl"
    source.write_bytes(orjson.dumps(EVENT) + b"\n")
    (original,) = import_file(source, owner="x").events
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(original.to_wire() + b"\n")
    (again,) = import_file(dump, owner="x").events
    assert again == original
