"""The linker's rule (``workers.linker``) as a table: a link, the entries, what must come of it."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.links import MAX_HUNK_CHARS, VerdictLink, diff_hunks
from store.entry import FixEntry
from workers.linker import change_sides, link_verdict

A, B, C = "a" * 40, "b" * 40, "c" * 40
NOW = 1_700_001_000.0


def _entry(n: int, **extra: Any) -> FixEntry:
    fields: dict[str, Any] = {
        "id": f"fix-{n:016x}",
        "ts": 1_700_000_000.0 + n,
        "project": "p",
        "task": "t",
        "files": ["src/calc.py"],
        "symbols": [],
        "errors": [],
        "tests": None,
        "outcome": "fixed",
        "solution": "",
        "tags": [],
    }
    fields.update(extra)
    return FixEntry(**fields)


def _ids(result: Any) -> list[str]:
    return [i for i, _ in result.targets]


CHANGE = "calc.py · add: return a - b → return a + b  # the sum"
DIFF = "--- a/src/calc.py\n+++ b/src/calc.py\n@@\n-    return a - b\n+    return a + b  # the sum\n }\n"

ROWS = [
    # (name, link, entries, linked entry numbers, by, reasons)
    (
        "commit the turn ended at",
        {"commit": A[:7]},
        [_entry(1, commit_end=A, commit_start=B)],
        [1],
        "commit",
        [],
    ),
    (
        "a dirty end is not the judged tree",
        {"commit": A},
        [_entry(1, commit_end=A, dirty=True)],
        [],
        "",
        ["no_match"],
    ),
    (
        "a turn that did not move HEAD",
        {"commit": A},
        [_entry(1, commit_end=A, commit_start=A)],
        [],
        "",
        ["no_match"],
    ),
    (
        "two turns at one commit",
        {"commit": A},
        [_entry(1, commit_end=A), _entry(2, commit_end=A)],
        [],
        "",
        ["ambiguous"],
    ),
    (
        "the session narrows the commit",
        {"commit": A, "session_id": "s2"},
        [_entry(1, commit_end=A, session_id="s1"), _entry(2, commit_end=A, session_id="s2")],
        [2],
        "commit",
        [],
    ),
    ("a turn after the verdict", {"commit": A}, [_entry(2_000, commit_end=A)], [], "", ["no_match"]),
    (
        "outside since/until",
        {"commit": A, "until": 1_700_000_000.5},
        [_entry(1, commit_end=A)],
        [],
        "",
        ["no_match"],
    ),
    (
        "the session's one entry",
        {"session_id": "s1"},
        [_entry(1, session_id="s1"), _entry(2, session_id="s2")],
        [1],
        "session",
        [],
    ),
    (
        "a session of two entries",
        {"session_id": "s1"},
        [_entry(1, session_id="s1"), _entry(2, session_id="s1")],
        [],
        "",
        ["ambiguous"],
    ),
    (
        "content narrows the session",
        {"session_id": "s1", "files": ["src/calc.py"]},
        [_entry(1, session_id="s1"), _entry(2, session_id="s1", files=["src/other.py"])],
        [1],
        "session",
        [],
    ),
    (
        "an unknown commit falls to content",
        {"commit": C, "hunks": diff_hunks(DIFF), "files": ["src/calc.py"]},
        [
            _entry(1, changes=[CHANGE]),
            _entry(2, files=["src/calc.py"], changes=["calc.py · mul: + return a * b * 1"]),
        ],
        [1],
        "content",
        [],
    ),
    (
        "changes found in hunks link every such entry",
        {"hunks": diff_hunks(DIFF)},
        [_entry(1, changes=[CHANGE]), _entry(2, files=["lib/calc.py"], changes=[CHANGE])],
        [1, 2],
        "content",
        [],
    ),
    (
        "a line that only starts alike is no match",
        {"hunks": diff_hunks(DIFF)},
        [_entry(1, changes=["calc.py · add: + return a + b # the"])],
        [],
        "",
        ["no_match"],
    ),
    (
        "files alone, one entry",
        {"files": ["src/calc.py", "README.md"]},
        [_entry(1), _entry(2, files=["x.py"])],
        [1],
        "content",
        [],
    ),
    ("files alone, two entries", {"files": ["src/calc.py"]}, [_entry(1), _entry(2)], [], "", ["ambiguous"]),
    (
        "an entry's files only partly in the commit",
        {"files": ["src/calc.py"]},
        [_entry(1, files=["src/calc.py", "src/io.py"])],
        [],
        "",
        ["ambiguous"],
    ),
    ("nothing alike", {"files": ["docs/x.md"]}, [_entry(1)], [], "", ["no_match"]),
    ("a subdirectory's paths", {"files": ["pkg/src/calc.py"]}, [_entry(1)], [1], "content", []),
]


@pytest.mark.parametrize(
    ("link", "entries", "linked", "by", "reasons"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_the_link_rule(
    link: dict[str, Any], entries: list[FixEntry], linked: list[int], by: str, reasons: list[str]
) -> None:
    result = link_verdict(VerdictLink(**link), "partial", NOW, entries)
    assert _ids(result) == [f"fix-{n:016x}" for n in linked]
    assert (result.by, list(result.unlinked)) == (by, reasons)
    assert all(o == "partial" for _, o in result.targets)


CI = {"commit": A, "tests": ["tests/test_calc.py::test_add", "tests/test_io.py::test_read"]}


@pytest.mark.parametrize(
    ("failed", "files", "expected"),
    [
        ([], ["src/calc.py"], [("fixed", [])]),
        (["tests/test_calc.py::test_add"], ["src/calc.py"], [("partial", [])]),
        (["tests/test_io.py::test_read"], ["src/calc.py"], [(None, ["failed_elsewhere"])]),
        (["tests/test_calc.py::test_add"], ["tests/test_calc.py"], [("partial", [])]),
    ],
)
def test_a_ci_run_judges_by_coverage(failed: list[str], files: list[str], expected: list[Any]) -> None:
    [(outcome, reasons)] = expected
    result = link_verdict(
        VerdictLink(**CI, failed=failed), "fixed", NOW, [_entry(1, commit_end=A, files=files)]
    )
    assert [o for _, o in result.targets] == ([outcome] if outcome else [])
    assert list(result.unlinked) == reasons


def test_hunks_and_changes_normalize_alike() -> None:
    assert diff_hunks(DIFF) == ["-return a - b", "+return a + b # the sum"]
    taken = VerdictLink(hunks=["-return  a -  b", "+" + "x" * 300]).hunks  # stripped only, or too long
    assert taken == ["-return a - b", "+" + "x" * (MAX_HUNK_CHARS - 1)]
    old, new = change_sides("calc.py · add: return   a - b → return a + b  # the sum…")
    assert (old, new) == ([("return a - b", True)], [("return a + b # the sum", False)])  # cut: a part
    assert change_sides("calc.py: + total = compute([...], offset + 1)") == (
        [],
        [("total = compute(", False), (", offset + 1)", False)],
    )


@pytest.mark.parametrize(
    "link",
    [{}, {"commit": "xyz1234"}, {"commit": "abc"}, {"hunks": ["return x"]}, {"files": [""]},
     {"commit": A, "since": 2.0, "until": 1.0}, {"commit": A, "failed": ["t"]}, {"commit": A, "extra": 1}],
)  # fmt: skip
def test_a_bad_link_is_refused(link: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        VerdictLink(**link)
