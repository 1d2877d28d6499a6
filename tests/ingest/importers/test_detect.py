"""Format detection: from the content, with the name only as a tie-breaker."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.importers import detect_format
from tests.ingest.importers.support import FIXTURES

REAL = [
    ("mini-swe-agent/django__django-16255.traj.json", "mini-swe-agent"),
    ("mini-swe-agent/pytest-dev__pytest-7521.traj.json", "mini-swe-agent"),
    ("swe-agent/swe-agent__test-repo-i1.traj", "swe-agent"),
    ("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj", "swe-agent"),
    ("swe-agent/marshmallow-code__marshmallow-1867.traj", "swe-agent"),
    ("openhands/multi_swe_bench_example/output.jsonl", "openhands"),
    ("openhands/resolver_mock_output/output.jsonl", "openhands"),
    ("openhands/runtime_trajs/basic.json", "openhands"),
    ("openhands/runtime_trajs/basic_gui_mode.json", "openhands"),
    ("claude-code/-home-dev-src-invoicer/5f0c7a52-3d3e-4b8e-9a51-0d2f6c1e9b47.jsonl", "claude-code"),
    ("claude-code/-home-dev-src-invoicer/agent-a1b2c3d4.jsonl", "claude-code"),
    ("aider/add-test.md", "aider"),
    ("aider/no-color.md", "aider"),
    ("codex/plangate_sample_rollout.jsonl", "codex"),
    ("codex/handwritten/rollout-2025-09-20T08-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl", "codex"),
    ("SOURCE.md", None),
    ("aider/LICENSE.source-repo.txt", None),
    ("swe-agent/SOURCE_COMMIT", None),
]


@pytest.mark.parametrize(("relative", "expected"), REAL)
def test_real_files_are_recognized_from_their_content(relative: str, expected: str | None) -> None:
    data = (FIXTURES / relative).read_bytes()
    # the name must not be what decides: the same bytes under a neutral name give the same answer
    assert detect_format(Path("log.bin"), data) == expected
    assert detect_format(FIXTURES / relative, data) == expected


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("e.jsonl", b'{"v": 1, "ts": 1.0, "owner": "a", "project_key": "p"}\n', "events"),
        ("x.jsonl", b'{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}\n', "codex"),
        ("x.jsonl", b'{"id": "s", "timestamp": "t", "instructions": null}\n{"type": "message"}\n', "codex"),
        ("x.jsonl", b'{"type": "summary", "summary": "s", "leafUuid": "u"}\n', "claude-code"),
        ("x.jsonl", b'{"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}\n', "claude-code"),
        ("x.jsonl", b'{"instance_id": "a__b-1", "history": []}\n', "openhands"),
        ("x.json", b'{"trajectory": [], "history": [], "info": {}}', "swe-agent"),
        ("x.json", b'{"info": {"mini_version": "1.0"}, "messages": []}', "mini-swe-agent"),
        ("x.traj.json", b'{\n  "info": {},\n  "messages": [\n', "mini-swe-agent"),  # a truncated head
        (".aider.chat.history.md", b"#### hi\n\nhello\n", "aider"),
        ("notes.md", b"# Notes\n\n#### heading\n", None),
        ("x.json", b'{"some": "json"}', None),
        ("x.json", b"[1, 2, 3]", None),
        ("x.bin", b"\x00\x01\x02binary", None),
        ("x.txt", b"   \n\t", None),
        ("x.txt", b"", None),
    ],
)
def test_detection_table(name: str, head: bytes, expected: str | None) -> None:
    assert detect_format(Path(name), head) == expected
