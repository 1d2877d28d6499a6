"""Bash-only turns: scripts that edit, scratch, program outputs, stash, git's own listings, changed_files.

Each table row is a turn the way mini-swe-agent and its forks write it (the commands are shaped on real
trajectories read for the [shell-files] issue) and the files it changed.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.schema import ToolEvent
from workers.extraction import Limits
from workers.extraction.files import collect_files
from workers.extraction.git_evidence import declared_patch, evidence_of
from workers.extraction.paths import PathResolver
from workers.extraction.pyscript import python_file_effects

WS = "/testbed"

UPDATE_HTTP = """cat <<'EOF' > update_http.py
file_path = 'django/utils/http.py'
with open(file_path, 'r') as f:
    content = f.read()
content = content.replace('year < 70', 'year < 50')
with open(file_path, 'w') as f:
    f.write(content)
EOF"""

EDIT_TOOL = """cat <<'EOF' > /testbed/edit_tool.py
import sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
open(path, 'w').write(text.replace(old, new))
EOF"""


def _bash(command: str, output: str = "", exit_code: int | None = 0) -> dict[str, Any]:
    return {"tool": "bash", "input": {"command": command}, "output": output, "exit_code": exit_code}


def _files(
    *events: dict[str, Any], persistent_cwd: bool = False, changed: list[str] | None = None
) -> list[str]:
    tool_events = [ToolEvent.model_validate(e) for e in events]
    return collect_files(
        tool_events,
        PathResolver.for_event(WS, WS),
        Limits(),
        persistent_cwd=persistent_cwd,
        changed_files=changed,
    ).files


TURNS: list[tuple[str, list[dict[str, Any]], list[str]]] = [
    (
        "a script written to disk, then run, edits the file it names through a variable",
        [_bash(UPDATE_HTTP), _bash("python3 update_http.py"), _bash("rm update_http.py")],
        ["django/utils/http.py"],
    ),
    (
        "python - <<EOF that reads and writes back a file",
        [_bash("python - <<'EOF'\np = 'src/a.py'\ns = open(p).read()\nopen(p, 'w').write(s + 'x')\nEOF")],
        ["src/a.py"],
    ),
    (
        "python -c with Path.read_text then write_text",
        [_bash("python -c \"from pathlib import Path; p = Path('src/b.py'); p.write_text(p.read_text())\"")],
        ["src/b.py"],
    ),
    (
        "an edit tool the agent wrote, run on the file it names as an argument",
        [_bash(EDIT_TOOL), _bash("python /testbed/edit_tool.py src/c.py 'a = 1' 'a = 2'")],
        ["edit_tool.py", "src/c.py"],
    ),
    (
        "a script fed the file on stdin writes it back",
        [
            _bash(
                "cat <<'EOF' > fix.py\nimport sys\nlines = sys.stdin.readlines()\n"
                "open('src/d.py', 'w').writelines(lines)\nEOF"
            ),
            _bash("python3 fix.py < src/d.py"),
            _bash("rm fix.py"),
        ],
        ["src/d.py"],
    ),
    (
        "a shell script with sed -i, run with bash, then removed",
        [
            _bash("cat <<'EOF' > patch.sh\nsed -i 's/a/b/' src/e.py\nEOF"),
            _bash("bash patch.sh"),
            _bash("rm patch.sh"),
        ],
        ["src/e.py"],
    ),
    (
        "ed with a heredoc script",
        [_bash("ed -s src/f.py <<'EOF'\n3d\nw\nq\nEOF")],
        ["src/f.py"],
    ),
    (
        "shutil.copy and os.replace: the temp file's destination, read before, is the edit",
        [
            _bash(
                "python3 - <<'EOF'\nimport os, shutil\nsrc = open('src/g.py').read()\n"
                "open('/tmp/g.new', 'w').write(src)\nos.replace('/tmp/g.new', 'src/g.py')\n"
                "shutil.copy('src/g.py', 'src/g_copy.py')\nEOF"
            )
        ],
        ["src/g.py", "src/g_copy.py"],
    ),
    (
        "scratch files created and removed in the same turn are not reported",
        [
            _bash("cat <<'EOF' > reproduce_issue.py\nprint(1)\nEOF"),
            _bash("cat <<'EOF' > test_edge.py\nprint(2)\nEOF"),
            _bash("sed -i 's/x/y/' src/h.py"),
            _bash("python reproduce_issue.py && python test_edge.py"),
            _bash("rm reproduce_issue.py test_edge.py"),
        ],
        ["src/h.py"],
    ),
    (
        "a program's outputs (plot, database, data file) are no edits, nor is their clean-up",
        [
            _bash(
                "cat <<'EOF' > repro.py\nimport matplotlib.pyplot as plt\nplt.savefig('out.png')\n"
                "open('test.qdp', 'w').write('READ SERR 1')\nEOF"
            ),
            _bash("python repro.py"),
            _bash("sed -i 's/x/y/' src/i.py"),
            _bash("rm repro.py test.qdp out.png db.sqlite3"),
        ],
        ["src/i.py"],
    ),
    (
        "rm -f of files the turn never touched is a clean-up",
        [_bash("sed -i 's/x/y/' src/j.py"), _bash("rm -f check_thing.py debug.log")],
        ["src/j.py"],
    ),
    (
        "a source file removed without being touched before is still a change",
        [_bash("rm src/legacy.py")],
        ["src/legacy.py"],
    ),
    (
        "rm of a file that was not there (rm says so) removes nothing",
        [
            _bash("sed -i 's/x/y/' src/k.py"),
            _bash(
                "rm gone.py; ls",
                "rm: cannot remove 'gone.py': No such file or directory\n",
            ),
        ],
        ["src/k.py"],
    ),
    (
        "a scratch project tree removed with rm -rf takes its files with it",
        [
            _bash("mkdir -p repro/docs && sphinx-quickstart -q repro/docs"),
            _bash("sed -i 's/a/b/' repro/docs/conf.py"),
            _bash("sed -i 's/x/y/' sphinx/ext/k.py"),
            _bash("rm -rf repro"),
        ],
        ["sphinx/ext/k.py"],
    ),
    (
        "every command runs in a fresh subshell: a cd does not carry to the next one",
        [_bash("cd tests && ls"), _bash("sed -i 's/x/y/' src/l.py")],
        ["src/l.py"],
    ),
    (
        "a command the shell could not parse ran nothing",
        [
            _bash(
                "sed -i '3c\\    it\\'s' src/m.py word other",
                "bash: -c: line 1: syntax error near unexpected token `('\n",
                2,
            )
        ],
        [],
    ),
    (
        "git stash sets the turn's changes aside, git stash pop brings them back",
        [
            _bash("sed -i 's/x/y/' src/n.py"),
            _bash("git stash && python -m pytest tests -q; git stash pop"),
        ],
        ["src/n.py"],
    ),
    (
        "git stash never popped (and git reset --hard) drops the tracked changes",
        [_bash("sed -i 's/x/y/' src/o.py"), _bash("git stash")],
        [],
    ),
    (
        "git checkout FILE without -- reverts it; git checkout . reverts everything",
        [
            _bash("sed -i 's/x/y/' src/p.py tests/test_p.py"),
            _bash("git checkout tests/test_p.py"),
            _bash("sed -i 's/x/y/' src/q.py"),
            _bash("git checkout ."),
            _bash("sed -i 's/x/y/' src/r.py"),
        ],
        ["src/r.py"],
    ),
    (
        "git status (long form) decides for the files it covers; later edits still count",
        [
            _bash("sed -i 's/x/y/' src/s.py src/t.py"),
            _bash("sed -i 's/y/x/' src/t.py"),  # an edit undone: git knows, the commands do not
            _bash(
                "git status",
                "On branch main\nChanges not staged for commit:\n"
                '  (use "git add <file>..." to update what will be committed)\n'
                "\tmodified:   src/s.py\n\n"
                'Untracked files:\n  (use "git add <file>..." to include in what will be committed)\n'
                "\tnotes/\n\n",
            ),
            _bash("sed -i 's/x/y/' src/u.py"),
        ],
        ["src/s.py", "src/u.py"],
    ),
    (
        "git status --porcelain with a rename and an untracked file",
        [
            _bash("sed -i 's/x/y/' src/v.py"),
            _bash("git mv src/w.py src/w2.py"),
            _bash("git status --porcelain", " M src/v.py\nR  src/w.py -> src/w2.py\n?? src/new.py\n"),
        ],
        ["src/v.py", "src/w.py", "src/w2.py", "src/new.py"],
    ),
    (
        "git diff --name-only covers tracked files only: a file the turn created stays",
        [
            _bash("sed -i 's/x/y/' src/x1.py src/x2.py"),
            _bash("cat <<'EOF' > tests/test_new.py\ndef test(): pass\nEOF"),
            _bash("git diff --name-only", "src/x1.py\n"),
        ],
        ["tests/test_new.py", "src/x1.py"],
    ),
    (
        "git status && git diff on one line: no listing, but the full diff still decides",
        [
            _bash("sed -i 's/x/y/' src/z1.py src/z2.py"),
            _bash(
                "git status && git diff",
                "On branch main\n\tmodified:   src/z1.py\n\tmodified:   src/z2.py\n"
                "diff --git a/src/z1.py b/src/z1.py\n--- a/src/z1.py\n+++ b/src/z1.py\n@@ -1 +1 @@\n-x\n+y\n",
            ),
        ],
        ["src/z1.py"],
    ),
    (
        "a git status piped into head is cut: no evidence",
        [_bash("sed -i 's/x/y/' src/y1.py"), _bash("git status | head -3", "On branch main\n")],
        ["src/y1.py"],
    ),
    (
        "the patch the agent writes out names the fix: scripts, tests it ran, an env fix are left out",
        [
            _bash("cat <<'EOF' > reproduce_issue.py\nimport pvlib\nEOF"),
            _bash("python reproduce_issue.py"),
            _bash("sed -i 's/np\\.Inf/np.inf/g' pvlib/singlediode.py"),
            _bash(
                "sed -i 's/a/b/' pvlib/temperature.py && cp pvlib/temperature.py pvlib/temperature.py.backup"
            ),
            _bash("cd /testbed && git diff -- pvlib/temperature.py > patch.txt"),
            _bash("cat > final_test.py << 'EOF'\nprint(1)\nEOF"),
            _bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt", "diff --git a/pvlib/…"),
        ],
        ["pvlib/temperature.py"],
    ),
    (
        "a written-out patch inside a longer line, for a directory and a file the edit was not seen for",
        [
            _bash("python fix_it.py"),  # the script is not in the log: its edits cannot be read
            _bash("sed -i 's/a/b/' src/pkg/a.py src/other.py"),
            _bash("git diff src/pkg/ docs/x.rst > patch.txt && cat patch.txt"),
        ],
        ["src/pkg/a.py", "docs/x.rst"],
    ),
    (
        "a git status that only looks after the written-out patch does not undo it (real: astroid-1866)",
        [
            _bash("sed -i 's/a/b/' src/q.py"),
            _bash("cat > edit_file.py << 'EOF'\nprint(1)\nEOF"),
            _bash("git diff -- src/q.py > patch.txt"),
            _bash("git status --porcelain", " M src/q.py\n?? edit_file.py\n?? patch.txt\n"),
        ],
        ["src/q.py"],
    ),
    (
        "a git status after the written-out patch is the last word when the turn changed files since",
        [
            _bash("sed -i 's/a/b/' src/q.py"),
            _bash("git diff -- src/q.py > patch.txt"),
            _bash("sed -i 's/c/d/' src/q2.py"),
            _bash("git status --porcelain", " M src/q.py\n M src/q2.py\n?? patch.txt\n"),
        ],
        ["src/q.py", "src/q2.py"],
    ),
    (
        "backup copies and a diff written to a file are outputs, not fix files",
        [
            _bash("cp src/b.py src/b.py.backup && cp src/c.py src/c.py.orig && cp src/d.py /tmp/d.py~"),
            _bash("sed -i 's/a/b/' src/b.py src/c.py"),
            _bash("git diff > fix.patch && diff -u src/c.py.orig src/c.py > c.diff"),
            _bash("cp src/b.py src/b_copy.py"),
        ],
        ["src/b.py", "src/c.py", "src/b_copy.py"],
    ),
    (
        "a diff against a commit, piped, or failed is no written-out patch",
        [
            _bash("sed -i 's/a/b/' src/r1.py src/r2.py"),
            _bash("git diff HEAD~1 -- src/r1.py > old.patch"),
            _bash("git diff -- src/r1.py | tee p2.txt"),
            _bash("git diff -- src/r1.py > /nonexistent/p3.txt", "No such file or directory", 1),
        ],
        ["src/r1.py", "src/r2.py", "p2.txt"],  # old.patch: git diff's output, not an edit
    ),
]


@pytest.mark.parametrize(("events", "expected"), [(e, f) for _, e, f in TURNS], ids=[t[0] for t in TURNS])
def test_bash_only_turns(events: list[dict[str, Any]], expected: list[str]) -> None:
    assert sorted(_files(*events)) == sorted(expected)


def test_a_persistent_shell_keeps_its_directory() -> None:
    events = [_bash("cd src && ls"), _bash("sed -i 's/x/y/' z.py")]
    assert _files(*events, persistent_cwd=True) == ["src/z.py"]
    assert _files(*events, persistent_cwd=False) == ["z.py"]


def test_changed_files_from_the_harness_are_the_truth() -> None:
    events = [_bash("sed -i 's/x/y/' src/a.py"), _bash("cat <<'EOF' > scratch.py\nx\nEOF")]
    assert _files(*events, changed=["src/b.py", "/testbed/src/c.py", "/elsewhere/d.py"]) == [
        "src/b.py",
        "src/c.py",
    ]
    assert _files(*events, changed=[]) == []


PY_EFFECTS: list[tuple[str, list[str], list[tuple[str, str]]]] = [
    ("open('a.py', 'w')", [], [("output", "a.py")]),
    ("p = 'a.py'\nx = open(p).read()\nopen(p, 'w').write(x)", [], [("write", "a.py")]),
    ("open('a.py', mode='a')", [], [("output", "a.py")]),
    ("open('a.py')\nopen('a.py', 'r')", [], []),
    ("import sys\nopen(sys.argv[1], 'w')", ["src/x.py"], [("output", "src/x.py")]),
    ("import sys\nopen(sys.argv[2], 'w')", ["src/x.py"], []),
    (
        "from pathlib import Path\nP = Path('src') / 'b.py'\nP.write_text(P.read_text())",
        [],
        [("write", "src/b.py")],
    ),
    (
        "import os\nos.path.join('src', 'c.py')\nopen(os.path.join('src', 'c.py'), 'w')",
        [],
        [("output", "src/c.py")],
    ),
    ("import shutil\nshutil.move('a.py', 'b.py')", [], [("delete", "a.py"), ("create", "b.py")]),
    ("import os\nos.remove('x.db')\nPath('y.py').unlink()", [], [("delete", "x.db"), ("delete", "y.py")]),
    (
        "import fileinput\nfor line in fileinput.input('c.py', inplace=True):\n    print(line)",
        [],
        [("write", "c.py")],
    ),
    (
        "for f in ['a.py', 'b.py']:\n    s = open(f).read()\n    open(f, 'w').write(s)",
        [],
        [("write", "a.py"), ("write", "b.py")],
    ),
    ("p = 'a.py'\np = compute()\nopen(p, 'w')", [], []),
    ("def f(:\n open('lit.py', 'w')", [], [("output", "lit.py")]),  # does not parse; the scanner reads it
    ("for f in ['a']:\n  open('lit.py', 'w')\n)", [], [("write", "lit.py")]),  # neither: the literal regex
    ("from pathlib import Path; p = Path('e.py'); p.write_text(p.read_text())", [], [("write", "e.py")]),
    (
        "import os\nos.unlink('t.db')\nopen(\n  'multi.py', 'w')",  # a line break in a call: the AST
        [],
        [("delete", "t.db"), ("output", "multi.py")],
    ),
    ("print('hello')", [], []),
]


@pytest.mark.parametrize(("code", "argv", "effects"), PY_EFFECTS, ids=[c[:40] for c, _, _ in PY_EFFECTS])
def test_python_file_effects(code: str, argv: list[str], effects: list[tuple[str, str]]) -> None:
    assert python_file_effects(code, argv) == effects


EVIDENCE: list[tuple[str, str, int | None, tuple[str, ...] | None]] = [
    ("git status -s", " M a.py\n?? b.py\nD  c.py\n", 0, ("a.py", "b.py", "c.py")),
    ("cd /testbed && git status --short", "MM a.py\n", 0, ("a.py",)),
    (
        "git diff --stat",
        " a.py | 2 +-\n b/c.py | 4 ++--\n 2 files changed, 3 insertions(+)\n",
        0,
        ("a.py", "b/c.py"),
    ),
    (
        "git diff --name-status",
        "M\ta.py\nR100\told.py\tnew.py\nD\tgone.py\n",
        0,
        ("a.py", "new.py", "old.py", "gone.py"),
    ),
    ("git diff --name-only", "a.py\n", 0, ("a.py",)),
    ("git diff --name-only", "", 0, ()),
    ("git status", "On branch main\nnothing to commit, working tree clean\n", 0, ()),
    ("git status", "fatal: not a git repository (or any of the parent directories): .git\n", 128, None),
    ("git status", "some other text\n", 0, None),
    ("git diff --stat HEAD~1", " a.py | 2 +-\n", 0, None),
    ("git diff --stat | tail -1", " 1 file changed\n", 0, None),
    ("git diff --stat", " .../very/long/path.py | 2 +-\n", 0, None),
    ("git log --stat", "commit abc\n", 0, None),
    ("git status && pytest", " M a.py\n", 0, None),
    ("ls", "a.py\n", 0, None),
]


@pytest.mark.parametrize(("command", "output", "code", "files"), EVIDENCE, ids=[e[0] for e in EVIDENCE])
def test_git_evidence(command: str, output: str, code: int | None, files: tuple[str, ...] | None) -> None:
    evidence = evidence_of(command, output, code)
    if files is None:
        assert evidence is None
    else:
        assert evidence is not None
        assert sorted(evidence.files + evidence.deleted) == sorted(files)


_NAMES = st.sampled_from(["src/a.py", "src/b.py", "lib/c.py", "d.txt", "tests/test_e.py"])
_EDITS = st.builds(
    lambda verb, path: {
        "sed": f"sed -i 's/x/y/' {path}",
        "heredoc": f"cat <<'EOF' > {path}\nx = 1\nEOF",
        "python": f"python - <<'EOF'\np = '{path}'\ns = open(p).read()\nopen(p, 'w').write(s)\nEOF",
        "rm": f"rm {path}",
        "mv": f"mv {path} {path}.bak",
    }[verb],
    st.sampled_from(["sed", "heredoc", "python", "rm", "mv"]),
    _NAMES,
)
_READS = st.builds(
    lambda verb, path: {
        "cat": f"cat {path}",
        "nl": f"nl -ba {path} | sed -n '1,20p'",
        "grep": f"grep -rn 'def ' {path}",
        "ls": "ls -la src",
        "find": "find . -name '*.py' | head",
        "diff": "git diff --stat HEAD~1",
        "log": "git log --oneline -3",
        "pytest": "python -m pytest -q tests",
    }[verb],
    st.sampled_from(["cat", "nl", "grep", "ls", "find", "diff", "log", "pytest"]),
    _NAMES,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_EDITS, max_size=6), _READS, st.integers(min_value=0, max_value=6))
def test_a_read_only_command_never_adds_a_file(edits: list[str], read: str, at: int) -> None:
    events = [_bash(c) for c in edits]
    with_read = [*events[:at], _bash(read, "some output\n"), *events[at:]]
    assert set(_files(*with_read)) <= set(_files(*events))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_EDITS, max_size=6), st.sampled_from(["scratch_1.py", "reproduce.py", "out/t.txt"]))
def test_a_file_created_then_removed_is_never_reported(edits: list[str], scratch: str) -> None:
    events = [
        _bash(f"cat <<'EOF' > {scratch}\nprint(1)\nEOF"),
        *[_bash(c) for c in edits],
        _bash(f"python {scratch}"),
        _bash(f"rm {scratch}"),
    ]
    assert scratch not in _files(*events)


DECLARED: list[tuple[str, int | None, tuple[str, ...] | None]] = [
    ("cd /testbed && git diff -- pvlib/temperature.py > patch.txt", 0, ("pvlib/temperature.py",)),
    ("git diff a.py b/c.py > fix.patch && cat fix.patch", 0, ("a.py", "b/c.py")),
    ("git diff --no-color -- a.py > p.txt", None, ("a.py",)),
    ("git diff -- a.py > p1.txt; git diff -- b.py > p2.txt", 0, ("b.py",)),
    ("git diff > patch.txt", 0, None),  # the whole tree: a full diff, not a choice of files
    ("git diff HEAD~1 -- a.py > p.txt", 0, None),
    ("git diff --stat -- a.py > p.txt", 0, None),
    ("git diff -- a.py | tee p.txt", 0, None),
    ("git diff -- a.py", 0, None),
    ("git diff -- a.py > /dev/null", 0, None),
    ("git diff -- a.py > p.txt", 1, None),
]


@pytest.mark.parametrize(("command", "code", "specs"), DECLARED, ids=[d[0] for d in DECLARED])
def test_declared_patch(command: str, code: int | None, specs: tuple[str, ...] | None) -> None:
    assert declared_patch(command, code) == specs
