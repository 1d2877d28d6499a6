"""The change summary: one ``file · symbol: old → new`` line per changed definition (pure)."""

from __future__ import annotations

import difflib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.schema import ToolEvent
from store.redact import REDACTED
from workers.extraction.changes import (
    MAX_CHANGES,
    MAX_LINE_CHARS,
    _edit_lines,
    describe,
    informative,
    summarize_changes,
)
from workers.extraction.paths import PathResolver

WS = "/repo"
RESOLVER = PathResolver.for_event(WS, WS)

SEPARABLE_DIFF = """diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py
--- a/astropy/modeling/separable.py
+++ b/astropy/modeling/separable.py
@@ -242,7 +242,7 @@ def _cstack(left, right):
         cright = _coord_matrix(right, 'right', noutp)
     else:
         cright = np.zeros((noutp, right.shape[1]))
-        cright[-right.shape[0]:, -right.shape[1]:] = 1
+        cright[-right.shape[0]:, -right.shape[1]:] = right

     return np.hstack([cleft, cright])
"""


def ev(
    tool: str, arguments: dict[str, Any], output: str = "", exit_code: int | None = 0, **kw: Any
) -> ToolEvent:
    return ToolEvent.model_validate(
        {"tool": tool, "input": arguments, "output": output, "exit_code": exit_code, **kw}
    )


def changes(*events: ToolEvent, files: list[str]) -> list[str]:
    return summarize_changes(list(events), RESOLVER, files)


def test_a_final_git_diff_gives_the_issue_example() -> None:
    events = [ev("bash", {"command": "git diff"}, SEPARABLE_DIFF)]
    assert changes(*events, files=["astropy/modeling/separable.py"]) == [
        "separable.py · _cstack: cright[...] = 1 → cright[...] = right"
    ]


@pytest.mark.parametrize(
    ("event", "files", "expected"),
    [
        (  # a structured edit inside a method: the symbol comes from the tool's snippet of the file
            ev(
                "Edit",
                {
                    "file_path": f"{WS}/src/auth.py",
                    "old_string": "    timeout = 30",
                    "new_string": "    timeout = 60",
                },
                "class Session:\n    def login(self):\n        timeout = 30\n",
            ),
            ["src/auth.py"],
            ["auth.py · login: timeout = 30 → timeout = 60"],
        ),
        (  # a sed substitution on a file (no diff printed): the pattern and replacement
            ev(
                "bash",
                {"command": "sed -i 's/except TypeError:/except (TypeError, ValueError):/' pkg/site.py"},
            ),
            ["pkg/site.py"],
            ["site.py: except TypeError: → except (TypeError, ValueError):"],
        ),
        (  # a Python script's str.replace on the one file it rewrites
            ev(
                "bash",
                {
                    "command": "python - <<'EOF'\np = 'pkg/io.py'\ns = open(p).read()\n"
                    "s = s.replace('no_color=True', 'no_color=not pretty')\nopen(p, 'w').write(s)\nEOF"
                },
            ),
            ["pkg/io.py"],
            ["io.py: no_color=True → no_color=not pretty"],
        ),
        (  # an OpenHands IPython agent skill edit
            ev(
                "run_ipython",
                {
                    "code": "edit_file_by_replace(\n'/repo/src/App.css',\nto_replace='color: black;',\n"
                    "new_content='color: var(--fg);',\n)"
                },
                "[File: /repo/src/App.css (79 lines total after edit)]",
            ),
            ["src/App.css"],
            ["App.css: color: black; → color: var(--fg);"],
        ),
        (  # a new file: its most informative line
            ev(
                "Write",
                {
                    "file_path": f"{WS}/util.py",
                    "content": "import os\n\ndef home():\n    return os.environ['HOME']\n",
                },
            ),
            ["util.py"],
            ["util.py · home: + return os.environ['HOME']"],
        ),
        (  # a file the entry does not keep (scratch) gives nothing
            ev("Write", {"file_path": f"{WS}/reproduce.py", "content": "print(compute(1))\n"}),
            ["src/app.py"],
            [],
        ),
        (  # a failed edit changed nothing
            ev(
                "str_replace_editor",
                {"command": "str_replace", "path": f"{WS}/a.py", "old_str": "x = 1", "new_str": "x = 2"},
                "No replacement was performed",
                exit_code=1,
            ),
            ["a.py"],
            [],
        ),
    ],
)
def test_change_lines(event: ToolEvent, files: list[str], expected: list[str]) -> None:
    assert changes(event, files=files) == expected


def test_edits_after_the_final_diff_are_added_and_earlier_ones_replaced() -> None:
    early = ev(
        "Edit",
        {"file_path": f"{WS}/astropy/modeling/separable.py", "old_string": "a = 1", "new_string": "a = 2"},
    )
    diff = ev("bash", {"command": "git diff"}, SEPARABLE_DIFF)
    late = ev(
        "Edit",
        {
            "file_path": f"{WS}/docs/changes.rst",
            "old_string": "Bug fixes",
            "new_string": "Bug fixes\n- separable fixed",
        },
    )
    got = changes(early, diff, late, files=["astropy/modeling/separable.py", "docs/changes.rst"])
    assert got == [
        "separable.py · _cstack: cright[...] = 1 → cright[...] = right",
        "changes.rst: + - separable fixed",
    ]


def test_files_are_taken_round_robin_source_before_tests() -> None:
    def edit(path: str, old: str, new: str) -> ToolEvent:
        return ev("Edit", {"file_path": f"{WS}/{path}", "old_string": old, "new_string": new})

    events = [
        edit("tests/test_a.py", "assert f(1) == 1", "assert f(1) == 2"),
        edit("a.py", "def f(x):\n    return x", "def f(x):\n    return x + 1"),
        edit("a.py", "def g(y):\n    return y", "def g(y):\n    return y * 2"),
        edit("b.py", "LIMIT = 10", "LIMIT = 20"),
    ]
    got = changes(*events, files=["tests/test_a.py", "a.py", "b.py"])
    assert got == [
        "a.py · f: return x → return x + 1",
        "b.py: LIMIT = 10 → LIMIT = 20",
        "test_a.py: assert f(1) == 1 → assert f(1) == 2",
        "a.py · g: return y → return y * 2",
    ]


def test_reformatting_alone_is_no_change() -> None:
    assert describe(["x = f('a')"], ['x = f("a")', "y = 2"]) == "+ y = 2"


def test_dull_lines_lose_to_informative_ones() -> None:
    assert informative("pass") == 0
    assert informative(")") == 0
    assert informative("# a comment about it") < informative("value = compute(a, b)")
    assert describe([], ["pass", "return compute(a, b)"]) == "+ return compute(a, b)"


def test_secrets_in_changed_lines_are_redacted() -> None:
    key = "sk-" + "a1B2" * 10
    event = ev(
        "Edit", {"file_path": f"{WS}/cfg.py", "old_string": "KEY = ''", "new_string": f"KEY = '{key}'"}
    )
    (line,) = changes(event, files=["cfg.py"])
    assert key not in line and REDACTED in line


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a.py", "b/c.py", "t/test_x.py", "d.go"]),
            st.text(max_size=300),
            st.text(max_size=300),
        ),
        max_size=12,
    )
)
def test_bounded_whatever_the_edits(edits: list[tuple[str, str, str]]) -> None:
    events = [ev("Edit", {"file_path": f"{WS}/{p}", "old_string": o, "new_string": n}) for p, o, n in edits]
    got = changes(*events, files=["a.py", "b/c.py", "t/test_x.py", "d.go"])
    assert len(got) <= MAX_CHANGES
    assert all(len(line) <= MAX_LINE_CHARS and "\n" not in line for line in got)


def _difflib_edit_lines(old: str, new: str) -> list[tuple[str, str]]:
    """What ``_edit_lines`` gave before its shortcut for sides with no line in common: difflib's opcodes."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    out: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            out.extend(("-", line) for line in old_lines[i1:i2])
            out.extend(("+", line) for line in new_lines[j1:j2])
    return out


_SIDES = st.lists(st.sampled_from(["a", "b", "c", "", "  x", "return 1"]), max_size=6).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(_SIDES, _SIDES)
def test_edit_lines_is_difflibs_with_or_without_a_line_in_common(old: str, new: str) -> None:
    assert _edit_lines(old, new) == _difflib_edit_lines(old, new)
