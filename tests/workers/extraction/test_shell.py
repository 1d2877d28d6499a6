"""Shell command lines → the files they write, create, delete or revert."""

from __future__ import annotations

import pytest

from workers.extraction.shell import parse_commands, reads_only, unwrap
from workers.extraction.shell_writes import python_effects, shell_effects

PATCH = "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n"


@pytest.mark.parametrize(
    ("command", "ops"),
    [
        ("echo hi > out.txt", [("create", "out.txt")]),
        ("echo hi >> log.txt", [("write", "log.txt")]),
        ("pytest -q 2>&1 | tail -5", []),
        # Logs are no fix files: stderr, both streams, a build's or test run's report (issue 3)
        ("make 2> err.log", []),
        ("make > build.log 2>&1", []),
        ("make >build.log 2>&1 && echo done > status.txt", [("create", "status.txt")]),
        ("cmd &> all.log", []),
        ("cmd >& all.log", []),
        ("pytest -q > out.txt", []),
        ("go test ./... 1> o.txt", []),
        ("python -m pytest tests >> report.txt", []),
        ("python3 -m pip install -e . > pip.log", []),
        ("npm install &> install.log", []),
        ("npm run build > build.log", []),
        ("cargo build 2>&1 | tee build.log", []),
        ("pytest -q 2>&1 | tee test.log", []),
        ("./gen.sh > src/generated.py 2> gen.err", [("create", "src/generated.py")]),
        ("python gen.py > src/table.py", [("create", "src/table.py")]),
        ("go run ./cmd/gen > internal/gen.go", [("create", "internal/gen.go")]),
        ("npm run gen > src/api.ts", [("create", "src/api.ts")]),
        ("pip freeze > requirements.txt", [("create", "requirements.txt")]),
        ("jq '.a = 1' cfg.json > cfg.new.json", [("create", "cfg.new.json")]),
        ("echo x > /dev/null", [("create", "/dev/null")]),  # dropped later by the path resolver
        ("cat <<'EOF' > src/new.py\nprint('a > b')\nEOF", [("create", "src/new.py")]),
        ("cat > a.py <<EOF\nx = 1\nEOF\npython a.py", [("create", "a.py")]),
        ("sed -i 's/a/b/' src/a.py src/b.py", [("write", "src/a.py"), ("write", "src/b.py")]),
        ("sed -i.bak -e 's/a/b/' -e 's/c/d/' f.py", [("write", "f.py")]),
        ("sed -i '' 's/a/b/' mac.py", [("write", "mac.py")]),
        ("sed -n '1,5p' f.py", []),
        ("sed --in-place=.orig 's/x/y/' g.py", [("write", "g.py")]),
        ("perl -pi -e 's/a/b/' x.pl y.pl", [("write", "x.pl"), ("write", "y.pl")]),
        ("perl -i.bak -pe 's/a/b/' z.pl", [("write", "z.pl")]),
        ("perl -ne 'print' z.pl", []),
        ("echo x | tee out1 out2", [("create", "out1"), ("create", "out2")]),
        ("echo x | tee -a app.log", [("write", "app.log")]),
        ("cp a.py b.py", [("create", "b.py")]),
        ("cp a.py b.py src/", [("create", "src/a.py"), ("create", "src/b.py")]),
        ("cp -t dest a.py", [("create", "dest/a.py")]),
        ("mv old.py new.py", [("delete", "old.py"), ("create", "new.py")]),
        ("touch a.py b.py", [("create", "a.py"), ("create", "b.py")]),
        ("rm -f reproduce.py test_x.py", [("discard", "reproduce.py"), ("discard", "test_x.py")]),
        ("git rm old.py", [("delete", "old.py")]),
        ("git mv a.py b.py", [("delete", "a.py"), ("create", "b.py")]),
        ("git checkout -- src/a.py", [("revert", "src/a.py")]),
        ("git checkout main", []),
        ("git restore src/a.py", [("revert", "src/a.py")]),
        ("git restore --staged src/a.py", []),
        (f"git apply <<'EOF'\n{PATCH}EOF", [("write", "src/x.py")]),
        (f"git apply --check <<'EOF'\n{PATCH}EOF", []),
        (f"patch -p1 <<'EOF'\n{PATCH}EOF", [("write", "src/x.py")]),
        ("python - <<'EOF'\nopen('cfg.ini', 'w').write('x')\nEOF", [("output", "cfg.ini")]),
        ("python3 -c \"open('a.txt','a').write('x')\"", [("output", "a.txt")]),
        ("python -c \"print(open('a.txt').read())\"", []),
        (
            "python3 - <<EOF\nfrom pathlib import Path\nPath('b.txt').write_text('x')\nEOF",
            [("output", "b.txt")],
        ),
        ("bash -c 'echo x > inner.txt'", [("create", "inner.txt")]),
        ("sudo -u app tee /etc/x.conf", [("create", "/etc/x.conf")]),
        ("FOO=1 timeout 30 sed -i 's/a/b/' t.py", [("write", "t.py")]),
        ("create reproduce.py", [("create", "reproduce.py")]),
        ("grep -rn 'foo > bar' src", []),
        ("echo 'unbalanced > quote", []),
        ("", []),
    ],
)
def test_shell_writes(command: str, ops: list[tuple[str, str]]) -> None:
    assert [(op.kind, op.path) for op in shell_effects(command).ops] == ops


def test_cd_moves_the_working_directory_for_later_commands() -> None:
    effects = shell_effects("cd src && echo x > a.py; cd /abs/dir && touch b.py", cwd="/repo")
    assert [(op.path, op.cwd) for op in effects.ops] == [("a.py", "/repo/src"), ("b.py", "/abs/dir")]
    assert effects.cwd == "/abs/dir"


def test_a_patch_file_written_earlier_in_the_turn_is_applied_by_name() -> None:
    contents: dict[str, str] = {}
    first = shell_effects(f"cat > fix.patch <<'EOF'\n{PATCH}EOF", "/repo", contents)
    second = shell_effects("git apply fix.patch", "/repo", contents)
    assert [(op.kind, op.path) for op in first.ops] == [("create", "fix.patch")]
    assert [(op.kind, op.path) for op in second.ops] == [("write", "src/x.py")]


@pytest.mark.parametrize(
    ("code", "paths"),
    [
        (
            "edit_file_by_replace('/workspace/src/App.css', to_replace='a', new_content='b')",
            ["/workspace/src/App.css"],
        ),
        ("create_file('notes.md')", ["notes.md"]),
        ("with open('LICENSE', 'w') as f:\n    f.write(x)", ["LICENSE"]),
        ("open_file('/workspace/src/App.tsx')", []),
    ],
)
def test_python_cells(code: str, paths: list[str]) -> None:
    assert [op.path for op in python_effects(code)] == paths


@pytest.mark.parametrize(
    ("command", "argvs", "separators"),
    [
        ("a && b || c; d | e", [["a"], ["b"], ["c"], ["d"], ["e"]], ["&&", "||", ";", "|", ""]),
        ("echo 'a;b' \"c|d\"", [["echo", "a;b", "c|d"]], [""]),
        ("echo $(date; ls) `x`", [["echo", "$(date; ls)", "`x`"]], [""]),
        ("ls # comment > out", [["ls"]], [""]),
        ("a \\\n  b", [["a", "b"]], [""]),
        # ``2>&1``: ``1`` is the redirection's target and what follows still separates (it was lost)
        ("pytest -q 2>&1 | tail -5", [["pytest", "-q"], ["tail", "-5"]], ["|", ""]),
        ("make >log 2>&1 && echo ok", [["make"], ["echo", "ok"]], ["&&", ""]),
    ],
)
def test_parse_commands(command: str, argvs: list[list[str]], separators: list[str]) -> None:
    commands = parse_commands(command)
    assert [c.argv for c in commands] == argvs
    assert [c.separator for c in commands] == separators


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["sudo", "-u", "x", "pytest"], ["pytest"]),
        (["env", "A=1", "B=2", "npm", "test"], ["npm", "test"]),
        (["timeout", "-s", "KILL", "60", "go", "test"], ["go", "test"]),
        (["uv", "run", "pytest", "-q"], ["pytest", "-q"]),
        (["npx", "--yes", "jest"], ["jest"]),
        (["A=1"], []),
    ],
)
def test_unwrap(argv: list[str], expected: list[str]) -> None:
    assert unwrap(argv) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat src/a.py", True),
        ("nl -ba f.py | sed -n '1,20p'", True),
        ("grep -rn Error src && ls", True),
        ("git diff", True),
        ("sed -i 's/a/b/' f.py", False),
        ("python run.py", False),
        ("cat f.py && python f.py", False),
        ("git commit -m x", False),
    ],
)
def test_reads_only(command: str, expected: bool) -> None:
    assert reads_only(command) is expected
