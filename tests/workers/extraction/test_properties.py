"""Properties: extraction never raises on arbitrary JSON-shaped events, never stores a secret, and its
work is bounded whatever the size of the turn (counted and measured in characters, never timed)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import workers.extraction.turn as turn_module
from ingest.schema import TurnEvent
from workers.extraction import Limits, extract
from workers.extraction.limits import scan_window, select_events, window_bound

JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=40)
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
SHELLISH = st.lists(
    st.sampled_from(
        [
            "sed -i",
            "'s/a/b/'",
            ">",
            ">>",
            "2>&1",
            "<<EOF",
            "<<'X'",
            "EOF",
            "X",
            "'",
            '"',
            "&&",
            "||",
            "|",
            ";",
            "\n",
            "$(",
            ")",
            "`",
            "\\",
            "cat",
            "rm",
            "mv",
            "cp",
            "tee",
            "git diff",
            "git apply",
            "patch -p1",
            "python -",
            "pytest",
            "cargo test",
            "cd",
            "/tmp/x",
            "a.py",
            "src/b.rs",
            "/home/u/app/c.go",
            "../d",
            "diff --git a/x b/x",
            "--- a/x",
            "+++ b/x",
            "@@ -1 +1 @@",
            "-old",
            "+new",
            "*** Update File: y",
            "Traceback (most recent call last):",
            "ValueError: 3",
            "FAILED t.py::x - E",
            "1 failed in 1s",
        ]
    ),
    max_size=25,
).map(" ".join)
TOOLS = st.sampled_from(
    [
        "bash",
        "Bash",
        "shell",
        "run",
        "CmdRun",
        "execute_command",
        "edit",
        "str_replace_editor",
        "Edit",
        "MultiEdit",
        "Write",
        "create_file",
        "apply_patch",
        "Read",
        "view",
        "run_ipython",
        "submit",
        "mystery",
    ]
)
TOOL_INPUT = st.one_of(
    JSON,
    st.fixed_dictionaries({"command": SHELLISH}),
    st.fixed_dictionaries({"path": SHELLISH, "old_str": SHELLISH, "new_str": SHELLISH}),
    st.fixed_dictionaries({"file_path": st.text(max_size=30), "content": SHELLISH}),
    st.fixed_dictionaries({"input": SHELLISH}),
    st.fixed_dictionaries({"code": SHELLISH}),
)
TOOL_EVENT = st.fixed_dictionaries(
    {"tool": TOOLS, "input": TOOL_INPUT},
    optional={
        "output": st.one_of(SHELLISH, JSON),
        "exit_code": st.none() | st.integers(-1, 300),
        "ok": st.none() | st.booleans(),
        "diff": st.none() | SHELLISH,
        "extra": JSON,
    },
)
LEGACY_EVENT = st.fixed_dictionaries(
    {"tool": TOOLS, "command": st.one_of(SHELLISH, JSON.map(orjson.dumps).map(bytes.decode))}
)
EVENT = st.fixed_dictionaries(
    {
        "v": st.just(1),
        "ts": st.floats(min_value=1, max_value=4e9),
        "owner": st.text(alphabet="abcdefghij-_", min_size=1, max_size=8),
        "project_key": st.sampled_from(["/home/u/app", "team/app", "app"]),
        "tool_events": st.lists(st.one_of(TOOL_EVENT, LEGACY_EVENT), max_size=8),
    },
    optional={
        "workspace": st.sampled_from(["", "/home/u/app", "/"]),
        "user_message": st.text(max_size=60),
        "round_texts": st.lists(st.text(max_size=40), max_size=3),
        "harness_meta": st.fixed_dictionaries(
            {},
            optional={
                "gate_downgraded": st.booleans(),
                "stop_reason": st.none() | st.text(max_size=20),
                "commit": st.none() | st.text(max_size=20),
            },
        ),
        "event_id": st.text(alphabet="abc123-", max_size=12),
    },
)


def _validated(data: dict[str, Any]) -> TurnEvent:
    try:
        return TurnEvent.model_validate(data)
    except ValidationError:
        assume(False)
        raise


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENT)
def test_extract_never_raises_and_keeps_its_invariants(data: dict[str, Any]) -> None:
    event = _validated(data)
    result = extract(event)
    assert (result.entry is None) != (result.skip is None)
    if result.entry is not None:
        entry = result.entry
        assert entry.files and len(entry.files) == len(set(entry.files))
        assert len(entry.errors) <= 10 and all(len(e) <= 200 for e in entry.errors)
        assert len(entry.solution) <= 240
        assert all(not f.startswith(("/tmp/", "/dev/")) and f != "/dev/null" for f in entry.files)
        orjson.loads(entry.model_dump_json())


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
SECRETS = st.one_of(
    st.text(UPPER_DIGITS, min_size=16, max_size=16).map(lambda s: "AKIA" + s),
    st.text(ALNUM, min_size=36, max_size=40).map(lambda s: "ghp_" + s),
    st.text(ALNUM + "_", min_size=40, max_size=60).map(lambda s: "github_pat_" + s),
    st.text(ALNUM + "-_", min_size=24, max_size=48).filter(lambda s: s[0].isalnum()).map(lambda s: "sk-" + s),
    st.text(ALNUM, min_size=24, max_size=48).map(lambda s: "sk-ant-api03-" + s),
    st.text(ALNUM, min_size=12, max_size=30).map(lambda s: "xoxb-1234-" + s),
    st.tuples(*[st.text(ALNUM, min_size=8, max_size=20)] * 3).map(
        lambda t: "eyJ" + ".eyJ".join(t[:2]) + "." + t[2]
    ),
)
WRAPPERS = st.sampled_from(
    [
        "{s}",
        "token={s}",
        "Authorization: Bearer {s}",
        "https://user:{s}@example.com/repo.git",
        "x {s} y",
        "password='{s}'",
        "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----",
    ]
)
PLACES = st.sampled_from(["user_message", "command", "output", "path", "round_text", "commit", "old_new"])


# The prefix's alphabet is disjoint from the secrets' (so a tail of the secret cannot appear by chance)
# and it ends with a separator: a secret glued to other word characters is not a token any more.
PREFIX = st.tuples(
    st.text("äöüßé #:=/\n", max_size=20), st.sampled_from([" ", "\n", ":", "=", "/", '"'])
).map("".join)


@settings(max_examples=300, deadline=None)
@given(secret=SECRETS, wrapper=WRAPPERS, place=PLACES, prefix=PREFIX)
def test_no_generated_secret_survives_in_the_dumped_entry(
    secret: str, wrapper: str, place: str, prefix: str
) -> None:
    leak = prefix + wrapper.format(s=secret)
    edit = {
        "tool": "Edit",
        "input": {"file_path": "/home/u/app/src/a.py", "old_string": "x", "new_string": "y"},
    }
    run = {"tool": "Bash", "input": {"command": "pytest -q"}, "output": "1 failed in 0.1s", "exit_code": 1}
    data: dict[str, Any] = {"v": 1, "ts": 1.0, "owner": "o", "project_key": "/home/u/app"}
    if place == "user_message":
        data["user_message"] = leak
    elif place == "command":
        run["input"] = {"command": f"{leak} && pytest -q"}
    elif place == "output":
        run["output"] = f"E   ValueError: {leak}\nFAILED t.py::x - RuntimeError: {leak}\n1 failed in 0.1s"
    elif place == "path":
        edit["input"]["file_path"] = f"/home/u/app/src/{secret}.py"
    elif place == "round_text":
        data["round_texts"] = [f"Done: {leak}. More."]
    elif place == "commit":
        data["harness_meta"] = {"commit": leak}
    else:
        edit["input"] = {
            "file_path": "/home/u/app/src/a.py",
            "old_string": leak,
            "new_string": f"def f():\n {leak}",
        }
    data["tool_events"] = [edit, run]
    entry = extract(TurnEvent.model_validate(data)).entry
    assert entry is not None
    dumped = entry.model_dump_json()
    assert secret not in dumped
    assert secret[-12:] not in dumped  # not even a tail of it


# --- bounded cost --------------------------------------------------------------------------------------
def test_scan_window_is_bounded_by_limits() -> None:
    limits = Limits(head_bytes=1000, tail_bytes=1000, max_interesting_lines=50, max_line_chars=100)
    noisy = "".join(f"line {i} Error: boom {'x' * 300}\n" for i in range(100_000))
    window = scan_window(noisy, limits)
    assert len(window) <= window_bound(limits)
    assert window.startswith("line 0 ") and window.rstrip().endswith("x")
    short = "ok\n" * 10
    assert scan_window(short, limits) == short


def test_select_events_keeps_the_first_quarter_and_the_last_three_quarters() -> None:
    chosen = select_events(list(range(10_000)), Limits(max_tool_events=100))
    assert len(chosen) == 100
    assert chosen[:25] == list(range(25)) and chosen[25:] == list(range(9925, 10_000))


def test_a_huge_turn_costs_bounded_work_and_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = Limits()
    scanned: list[int] = []
    real_find_errors = turn_module.find_errors

    def counting_find_errors(text: str) -> list[str]:
        scanned.append(len(text))
        return real_find_errors(text)

    monkeypatch.setattr(turn_module, "find_errors", counting_find_errors)
    huge_output = ("collecting ... Error: flaky line\n" + "." * 200 + "\n") * 45_000  # ~10 MB
    assert len(huge_output) > 10_000_000
    events: list[dict[str, Any]] = [
        {
            "tool": "bash",
            "input": {"command": f"echo {i} >> src/log{i % 7}.txt"},
            "output": "ok",
            "exit_code": 0,
        }
        for i in range(10_000)
    ]
    events.append(
        {
            "tool": "bash",
            "input": {"command": "pytest -q"},
            "output": huge_output + "1 failed in 9s",
            "exit_code": 1,
        }
    )
    event = TurnEvent.model_validate(
        {"v": 1, "ts": 1.0, "owner": "o", "project_key": "/p", "tool_events": events}
    )
    tracemalloc.start()
    try:
        result = extract(event, limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.entry is not None and result.entry.outcome == "partial"
    assert len(scanned) <= limits.max_tool_events
    assert max(scanned) <= window_bound(limits)
    assert sum(scanned) <= limits.max_tool_events * window_bound(limits)
    assert peak < 16 * 1024 * 1024  # the 10 MB output is never copied whole
