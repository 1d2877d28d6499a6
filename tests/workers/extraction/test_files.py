"""Diffs, paths and the files a turn touched (scratch, failed edits, reverts, the final diff)."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.schema import ToolEvent
from workers.extraction import Limits
from workers.extraction.diffs import parse_patch
from workers.extraction.files import collect_files, prints_full_diff
from workers.extraction.paths import PathResolver

WS = "/home/u/app"

GIT_DIFF = """diff --git a/src/auth.py b/src/auth.py
index 1111111..2222222 100644
--- a/src/auth.py
+++ b/src/auth.py
@@ -10,7 +10,7 @@ class Session:
     def refresh(self):
-        timeout = 30
+        timeout = 60
         return timeout
--- not a header, a removed line that starts with two dashes
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1 @@
+hello
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/a.py b/b.py
similarity index 90%
rename from a.py
rename to b.py
"""

ENVELOPE = """*** Begin Patch
*** Update File: src/app.py
@@ def main():
-    print("a")
+    print("b")
*** Add File: src/util.py
+def helper():
+    return 1
*** Delete File: src/gone.py
*** Update File: src/mv_from.py
*** Move to: src/mv_to.py
*** End Patch
"""


def test_git_diff_files_statuses_and_hunks() -> None:
    files = parse_patch(GIT_DIFF)
    assert [(f.path, f.status) for f in files] == [
        ("src/auth.py", "modified"),
        ("docs/new.md", "added"),
        ("old.txt", "deleted"),
        ("b.py", "renamed"),
    ]
    assert files[0].hunks[0].context == "class Session:"
    assert files[3].old_path == "a.py"


def test_hunk_counts_keep_dash_lines_inside_the_hunk() -> None:
    text = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,1 @@\n--- old banner\n keep\n"
    files = parse_patch(text)
    assert [f.path for f in files] == ["x.py"]
    assert files[0].hunks[0].lines == ["--- old banner", " keep"]


def test_apply_patch_envelope() -> None:
    files = parse_patch(ENVELOPE)
    assert [(f.path, f.status) for f in files] == [
        ("src/app.py", "modified"),
        ("src/util.py", "added"),
        ("src/gone.py", "deleted"),
        ("src/mv_to.py", "renamed"),
    ]


def test_plain_unified_diff_with_timestamps_and_crlf() -> None:
    text = "--- src/a.c\t2024-01-01 10:00\r\n+++ src/a.c\t2024-01-02 10:00\r\n@@ -1 +1 @@\r\n-x\r\n+y\r\n"
    assert [f.path for f in parse_patch(text)] == ["src/a.c"]


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        ("/home/u/app/src/a.py", None, "src/a.py"),
        ("src/../src/a.py", None, "src/a.py"),
        ("./a.py", "/home/u/app/pkg", "pkg/a.py"),
        ("/dev/null", None, None),
        ("/tmp/scratch.py", None, None),
        ("/var/tmp/x", None, None),
        ("/etc/hosts", None, None),
        ("/home/u/other/x.py", None, None),
        ("../outside.py", None, None),
        ("src/*.py", None, None),
        ("$HOME/x", None, None),
        ("", None, None),
        ("C:\\x\\y.py", None, None),
    ],
)
def test_path_resolution(path: str, cwd: str | None, expected: str | None) -> None:
    assert PathResolver.for_event(WS, "k").resolve(path, cwd) == expected


def test_a_project_under_tmp_keeps_its_files_and_scratch_outside_it_is_still_scratch() -> None:
    """A sandbox's checkout under /tmp is a project like any other: every file of it was dropped."""
    resolver = PathResolver.for_event("/tmp/sandbox/app", "k")
    assert resolver.resolve("/tmp/sandbox/app/src/a.py") == "src/a.py"
    assert resolver.resolve("src/a.py", "/tmp/sandbox/app") == "src/a.py"
    assert resolver.resolve("/tmp/scratch.py") is None
    assert resolver.resolve("/tmp/sandbox/app") is None
    assert PathResolver.for_event("", "k").resolve("/tmp/scratch.py") is None
    assert PathResolver.for_event("", "k").resolve("/srv/app/a.py") == "/srv/app/a.py"


def test_without_a_workspace_an_absolute_project_key_serves() -> None:
    assert PathResolver.for_event("", "/srv/proj").resolve("/srv/proj/a.py") == "a.py"
    assert PathResolver.for_event("", "team/proj").resolve("a.py") == "a.py"


def _files(*events: dict[str, Any]) -> list[str]:
    tool_events = [ToolEvent.model_validate(e) for e in events]
    return collect_files(tool_events, PathResolver.for_event(WS, WS), Limits()).files


def _bash(command: str, output: str = "", exit_code: int | None = 0) -> dict[str, Any]:
    return {"tool": "bash", "input": {"command": command}, "output": output, "exit_code": exit_code}


def test_scratch_created_and_deleted_is_not_a_fix_file() -> None:
    files = _files(
        _bash("cat > reproduce.py <<'EOF'\nprint(1)\nEOF"),
        _bash("sed -i 's/a/b/' src/fix.py"),
        _bash("python reproduce.py && rm reproduce.py"),
    )
    assert files == ["src/fix.py"]


def test_logs_of_builds_and_test_runs_are_not_fix_files() -> None:
    """Issue 3: ``make 2> err.log`` recorded err.log as a fix file; a file a turn only logs to is none."""
    files = _files(
        _bash("make 2> err.log"),
        _bash("sed -i 's/a/b/' src/fix.py"),
        _bash("pytest -q > out.txt 2>&1; npm test 2>&1 | tee test.log", exit_code=1),
        _bash("python gen.py > src/table.py"),
    )
    assert files == ["src/fix.py", "src/table.py"]


def test_deleting_a_file_that_existed_is_a_change() -> None:
    assert _files(_bash("rm src/legacy.py")) == ["src/legacy.py"]


def test_rm_rf_of_a_build_dir_is_no_change() -> None:
    assert _files(_bash("rm -rf build dist"), _bash("touch src/a.py")) == ["src/a.py"]


def test_recreated_after_delete_counts_again() -> None:
    assert _files(_bash("touch a.py"), _bash("rm a.py"), _bash("echo x > a.py")) == ["a.py"]


def test_revert_removes_the_file() -> None:
    assert _files(_bash("sed -i 's/a/b/' a.py b.py"), _bash("git checkout -- a.py")) == ["b.py"]


@pytest.mark.parametrize(
    "failed",
    [
        {"output": "ERROR:\nNo replacement was performed, old_str `x` did not appear verbatim in a.py."},
        {"output": "<tool_use_error>String to replace not found in file.</tool_use_error>"},
        {"output": "Your proposed edit has introduced new syntax error(s)."},
        {"ok": False},
        {"exit_code": 1},
    ],
)
def test_failed_edits_touch_nothing(failed: dict[str, Any]) -> None:
    edit = {
        "tool": "str_replace_editor",
        "input": {"command": "str_replace", "path": f"{WS}/a.py", "old_str": "x", "new_str": "y"},
        **failed,
    }
    assert _files(edit) == []


def test_edit_families_and_reads() -> None:
    files = _files(
        {"tool": "Read", "input": {"file_path": f"{WS}/read_only.py"}},
        {"tool": "str_replace_editor", "input": {"command": "view", "path": f"{WS}/viewed.py"}},
        {"tool": "Edit", "input": {"file_path": f"{WS}/b.py", "old_string": "1", "new_string": "2"}},
        {"tool": "Write", "input": {"file_path": f"{WS}/c.py", "content": "x"}},
        {
            "tool": "MultiEdit",
            "input": {"file_path": f"{WS}/d.py", "edits": [{"old_string": "a", "new_string": "b"}]},
        },
        {"tool": "edit_file", "input": {"target_file": "e.py", "code_edit": "..."}},
        {"tool": "apply_patch", "input": {"input": ENVELOPE}},
        {"tool": "mystery_tool", "input": {"blob": GIT_DIFF.split("--- not", maxsplit=1)[0]}},
        {"tool": "Edit", "input": {"file_path": f"{WS}/same.py", "old_string": "x", "new_string": "x"}},
        {"tool": "Write", "input": {"file_path": "/tmp/notes.txt", "content": "x"}},
    )
    assert files == [
        "b.py",
        "c.py",
        "d.py",
        "e.py",
        "src/app.py",
        "src/util.py",
        "src/gone.py",
        "src/mv_from.py",
        "src/mv_to.py",
        "src/auth.py",
    ]


def test_legacy_tool_event_with_a_diff_field() -> None:
    legacy = {"tool": "edit", "command": '{"path": "src/auth.py"}', "output": "ok", "diff": GIT_DIFF[:300]}
    assert _files(legacy) == ["src/auth.py"]


def test_the_final_git_diff_is_authoritative() -> None:
    files = _files(
        _bash("sed -i 's/a/b/' src/tried.py"),  # reverted by hand later, absent from the final diff
        _bash("sed -i 's/a/b/' src/auth.py"),
        _bash("git add -A && git diff --cached", output=GIT_DIFF),
        _bash("echo x >> src/after.py"),
    )
    assert files == ["src/auth.py", "docs/new.md", "old.txt", "b.py", "src/after.py"]


def test_a_partial_diff_is_not_authoritative() -> None:
    files = _files(_bash("sed -i 's/a/b/' x.py"), _bash("git diff src/auth.py", output=GIT_DIFF))
    assert files == ["x.py"]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git diff", True),
        ("git add -A && git diff --cached", True),
        ("git --no-pager diff HEAD", True),
        ("submit", True),
        ("git diff --stat", False),
        ("git diff src/a.py", False),
        ("git status", False),
    ],
)
def test_prints_full_diff(command: str, expected: bool) -> None:
    assert prints_full_diff(command) is expected


def test_outside_workspace_and_shell_cwd() -> None:
    files = _files(
        _bash('echo "int main() {}" > /workspace/test.c'),
        _bash("cd /home/u/app/src && sed -i 's/a/b/' mod.py"),
        _bash("echo x > out.txt"),  # the shell stays in src/
    )
    assert files == ["src/mod.py", "src/out.txt"]


def test_an_edit_is_located_in_the_content_a_read_showed() -> None:
    tool_events = [
        ToolEvent.model_validate(e)
        for e in (
            {
                "tool": "Read",
                "input": {"file_path": f"{WS}/auth.py"},
                "output": "  1→class Session:\n  2→    def refresh(self):\n  3→        timeout = 30\n",
            },
            {
                "tool": "Edit",
                "input": {
                    "file_path": f"{WS}/auth.py",
                    "old_string": "        timeout = 30",
                    "new_string": "        timeout = 60",
                },
                "output": "ok",
            },
        )
    ]
    result = collect_files(tool_events, PathResolver.for_event(WS, WS), Limits())
    assert (result.files, result.symbols) == (["auth.py"], ["refresh"])
