"""``fixmem notes add|check`` against real git repositories made in the test."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from fixmem.cli import main
from store import FixEntry, entry_id, estimate_tokens, prompt_block
from store.notes import new_note, parse_memory
from store.notes.render import NOTE_STALE_MARK
from store.notes.workspace import append_note, workspace_prompt_block
from store.persist.export import jsonl_lines
from tests.configs import fix_store

MEMORY = Path(".fixmem") / "memory.md"


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Git without the machine's config (signing, hooks) and with a fixed identity."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")
    monkeypatch.delenv("FIXMEM_WORKSPACE", raising=False)
    monkeypatch.delenv("FIXMEM_NOTES_CEILING", raising=False)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, "a.txt")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def check_json(capsys: pytest.CaptureFixture[str], repo: Path) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, "notes", "check", "--workspace", str(repo), "--format", "json")
    return code, json.loads(out)


def test_add_stamps_today_and_the_git_head(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = date.today()
    code, out, err = run(
        capsys,
        "notes", "add", "--workspace", str(repo), "--kind", "gotcha",
        "--subject", "make test needs go generate first", "--body", "the generated files go stale.",
    )  # fmt: skip
    after = date.today()
    assert code == 0, err
    short = git(repo, "rev-parse", "--short", "HEAD")
    text = (repo / MEMORY).read_text()
    assert text in {
        "## gotcha: make test needs go generate first\n"
        f"<!-- learned {day.isoformat()} · commit {short} -->\n"
        "\n"
        "the generated files go stale.\n"
        for day in (before, after)
    }
    assert f"{repo / MEMORY}:1" in out
    assert err == ""


def test_add_appends_after_hand_written_text(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / MEMORY).parent.mkdir()
    (repo / MEMORY).write_text("# Memory\n\n## decision: use orjson\nit is fast")  # no final newline
    code, out, _ = run(
        capsys, "notes", "add", "-w", str(repo), "-k", "convention", "-s", "errors carry the path"
    )
    assert code == 0
    memory = parse_memory((repo / MEMORY).read_text())
    assert memory.malformed == ()
    assert [(n.kind, n.subject, n.body) for n in memory.notes] == [
        ("decision", "use orjson", "it is fast"),
        ("convention", "errors carry the path", ""),
    ]
    header_line = memory.notes[1].line
    assert out.strip().endswith(f"{repo / MEMORY}:{header_line}")
    assert (repo / MEMORY).read_text().split("\n")[header_line - 1] == "## convention: errors carry the path"


@pytest.mark.parametrize(
    ("kind", "subject", "message"),
    [
        ("diary", "what I did today", "'diary' is not a kind of note; the kinds are gotcha, decision and"),
        ("gotcha", "", "the subject is empty"),
        ("gotcha", "   ", "the subject is empty"),
    ],
)
def test_add_refuses_unknown_kinds_and_empty_subjects(
    repo: Path, capsys: pytest.CaptureFixture[str], kind: str, subject: str, message: str
) -> None:
    code, _, err = run(capsys, "notes", "add", "-w", str(repo), "--kind", kind, "--subject", subject)
    assert code == 2
    assert message in err
    assert not (repo / MEMORY).exists()


def test_add_refuses_a_missing_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "notes", "add", "-w", str(tmp_path / "nope"), "-k", "gotcha", "-s", "x")
    assert code == 2
    assert "is not a directory" in err


def test_add_outside_git_writes_no_commit_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "notes", "add", "-w", str(tmp_path), "-k", "decision", "-s", "no git here")
    assert code == 0
    note = parse_memory((tmp_path / MEMORY).read_text()).notes[0]
    assert note.commit is None and note.learned is not None
    assert "no git HEAD" in err


def test_check_lists_notes_and_passes_when_clean(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "notes", "add", "-w", str(repo), "-k", "gotcha", "-s", "first")
    run(capsys, "notes", "add", "-w", str(repo), "-k", "decision", "-s", "second")
    code, out, err = run(capsys, "notes", "check", "-w", str(repo))
    assert code == 0, err
    assert "2 note(s), 0 malformed line(s), 0 stale note(s)" in out
    assert "gotcha" in out and "first" in out and "second" in out
    assert "stale:" not in out and err == ""


def test_check_fails_on_malformed_lines_and_names_them(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / MEMORY).parent.mkdir()
    (repo / MEMORY).write_text("## gotcha: fine\n\n## diary: today\n## decision:\n")
    code, _, err = run(capsys, "notes", "check", "-w", str(repo))
    assert code == 1
    assert f"malformed: {repo / MEMORY}:3: '## diary: today'" in err
    assert f"malformed: {repo / MEMORY}:4: '## decision:'" in err
    assert "2 malformed line(s)" in err
    code, report = check_json(capsys, repo)
    assert code == 1
    assert [(m["line"], m["lost_block"]) for m in report["malformed"]] == [(3, True), (4, True)]


def test_check_without_a_memory_file_is_quiet_and_ok(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "notes", "check", "-w", str(repo))
    assert code == 0
    assert "no memory file" in out


def test_check_names_a_file_that_is_not_utf8(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / MEMORY).parent.mkdir()
    (repo / MEMORY).write_bytes(b"## gotcha: ok\n\xff\xfe broken\n")
    code, _, err = run(capsys, "notes", "check", "-w", str(repo))
    assert code == 1
    assert f"{repo / MEMORY}:2: not UTF-8" in err


def _stale(report: dict[str, Any]) -> dict[str, bool]:
    return {n["subject"]: n["stale"] for n in report["notes"]}


def test_a_note_goes_stale_after_commit_amend(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "notes", "add", "-w", str(repo), "-k", "gotcha", "-s", "before the rewrite")
    code, report = check_json(capsys, repo)
    assert (code, _stale(report), report["commits_checked"]) == (0, {"before the rewrite": False}, True)

    git(repo, "commit", "-q", "--amend", "-m", "rewritten")  # the stamped commit is no longer reachable
    run(capsys, "notes", "add", "-w", str(repo), "-k", "decision", "-s", "after the rewrite")
    code, report = check_json(capsys, repo)
    assert code == 0  # stale is reported, not an error
    assert _stale(report) == {"before the rewrite": True, "after the rewrite": False}
    code, out, _ = run(capsys, "notes", "check", "-w", str(repo))
    assert "1 stale note(s)" in out
    assert "stale: " in out and "before the rewrite" in out.split("stale: ", 1)[1]


def test_a_note_goes_stale_after_a_reset_to_a_new_root(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit(repo, "b.txt")
    run(capsys, "notes", "add", "-w", str(repo), "-k", "gotcha", "-s", "old history")
    git(repo, "checkout", "-q", "--orphan", "fresh")
    git(repo, "commit", "-q", "-m", "new root")
    git(repo, "branch", "-q", "-D", "main")
    _, report = check_json(capsys, repo)
    assert _stale(report) == {"old history": True}


def test_nothing_is_marked_when_nothing_could_be_checked(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Outside git: an empty set of known commits, nothing marked.
    plain = tmp_path / "plain"
    (plain / ".fixmem").mkdir(parents=True)
    (plain / MEMORY).write_text("## gotcha: x\n<!-- learned 2026-01-01 · commit 0000000 -->\n")
    _, report = check_json(capsys, plain)
    assert (_stale(report), report["commits_checked"]) == ({"x": False}, False)

    # A shallow clone lacks older history by design: checking it would mark every older note.
    run(capsys, "notes", "add", "-w", str(repo), "-k", "gotcha", "-s", "stamped at the first commit")
    git(repo, "add", str(MEMORY))
    git(repo, "commit", "-q", "-m", "memory")
    commit(repo, "c.txt")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)], check=True)
    _, report = check_json(capsys, clone)
    assert (_stale(report), report["commits_checked"]) == ({"stamped at the first commit": False}, False)


def test_check_marks_notes_beyond_the_ceiling(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIXMEM_NOTES_CEILING", "2")
    for subject in ("one", "two", "three"):
        run(capsys, "notes", "add", "-w", str(repo), "-k", "convention", "-s", subject)
    _, report = check_json(capsys, repo)
    assert [(n["subject"], n["shown"]) for n in report["notes"]] == [
        ("one", False),
        ("two", True),
        ("three", True),
    ]
    _, out, _ = run(capsys, "notes", "check", "-w", str(repo))
    assert "1 older note(s) are beyond the ceiling of 2" in out


def test_add_reads_a_multi_line_body_from_stdin(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("first line\n\n    indented trace\n"))
    code, _, _ = run(capsys, "notes", "add", "-w", str(repo), "-k", "gotcha", "-s", "trace", "--body", "-")
    assert code == 0
    assert parse_memory((repo / MEMORY).read_text()).notes[0].body == "first line\n\n    indented trace"


# -- the review queue, export and import (a real store in tmp_path) -----------------------------------

T0 = 1_780_000_000.0


def fix(n: int, outcome: str = "fixed", **fields: Any) -> FixEntry:
    values: dict[str, Any] = {
        "id": entry_id("alice", "web", f"turn-{n}"),
        "ts": T0 + n * 86_400,
        "project": "web",
        "task": f"fix the flaky login test, take {n}",
        "files": [f"src/f{n}.py"],
        "symbols": [],
        "errors": ["TimeoutError: login timed out after # seconds"],
        "tests": None,
        "outcome": outcome,
        "solution": f"solution {n}",
        "tags": [],
    }
    values.update(fields)
    return FixEntry.model_validate(values)


@pytest.fixture
def log(data_dir: Path) -> list[FixEntry]:
    store = fix_store(data_dir)
    store.append(
        "alice",
        "web",
        [
            fix(1, errors=["KeyError: 'user'"], files=["src/users.py"], commit="c" * 40),
            fix(2, outcome="partial", errors=["KeyError: 'user'"], files=["src/users.py"]),
            fix(3),
            fix(4),
            fix(5),
        ],
    )
    return store.read("alice", "web").entries


def store_args(data_dir: Path) -> list[str]:
    return ["--owner", "alice", "--data-dir", str(data_dir)]


def test_suggest_proposes_and_writes_nothing(
    repo: Path, data_dir: Path, log: list[FixEntry], capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: p.read_bytes() for p in data_dir.rglob("*") if p.is_file()}
    code, out, err = run(capsys, "notes", "suggest", "-p", "web", "-w", str(repo), *store_args(data_dir))
    assert code == 0, err
    assert "2 suggestion(s) for 'web' (read-only; nothing was written)" in out
    hint = f"--kind gotcha --project web --owner alice --data-dir {data_dir} --workspace {repo}"
    assert f"promote: fixmem notes promote {log[0].id} {hint}" in out
    assert f"promote: fixmem notes promote {log[4].id} {hint}" in out
    assert "fixed 3 times" in out
    assert {p: p.read_bytes() for p in data_dir.rglob("*") if p.is_file()} == before
    assert not (repo / MEMORY).exists()
    code, out, _ = run(
        capsys, "notes", "suggest", "-p", "web", "-w", str(repo), *store_args(data_dir), "--format", "json"
    )
    assert [s["fix_id"] for s in json.loads(out)] == [log[0].id, log[4].id]


def test_the_printed_promote_command_runs_as_printed(
    repo: Path, data_dir: Path, log: list[FixEntry], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each suggestion's ``promote:`` line is a shell command that promotes that suggestion's fix."""
    _, out, _ = run(capsys, "notes", "suggest", "-p", "web", "-w", str(repo), *store_args(data_dir))
    hints = [line.split("promote: ", 1)[1] for line in out.splitlines() if "promote: " in line]
    assert len(hints) == 2
    for number, hint in enumerate(hints, start=1):
        argv = shlex.split(hint)
        assert argv[0] == "fixmem"
        code, printed, err = run(capsys, *argv[1:])
        assert code == 0, err
        assert f"promoted {argv[3]} as gotcha" in printed
        assert len(parse_memory((repo / MEMORY).read_text()).notes) == number
    _, out, _ = run(capsys, "notes", "suggest", "-p", "web", "-w", str(repo), *store_args(data_dir))
    assert "no suggestions" in out


def test_the_owner_defaults_to_fixmem_owner_then_the_login_name(
    repo: Path,
    data_dir: Path,
    log: list[FixEntry],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's forms run as written: ``fixmem notes suggest --project P``, ``fixmem export --project P
    --format markdown``; the owner comes from FIXMEM_OWNER, else from the login name."""
    monkeypatch.chdir(repo)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FIXMEM_OWNER", "alice")
    code, out, err = run(capsys, "notes", "suggest", "--project", "web")
    assert code == 0, err
    assert "2 suggestion(s) for 'web'" in out and "--owner alice" in out
    code, out, err = run(capsys, "export", "--project", "web", "--format", "markdown")
    assert (code, out.startswith("# Fix log: web\n")) == (0, True), err
    for name in ("FIXMEM_OWNER", "LOGNAME", "USER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("fixmem.identity.uid_login_name", lambda: "alice")
    code, out, err = run(capsys, "notes", "suggest", "--project", "web")
    assert code == 0 and "2 suggestion(s) for 'web'" in out, err
    monkeypatch.setattr("fixmem.identity.uid_login_name", lambda: "bob")  # bob has no fix log for 'web'
    code, out, _ = run(capsys, "notes", "suggest", "--project", "web")
    assert code == 0 and "no suggestions for 'web' (0 entries read" in out

    monkeypatch.setattr("fixmem.identity.uid_login_name", lambda: "")  # uid 12345 has no passwd entry
    code, _, err = run(capsys, "notes", "suggest", "--project", "web")
    assert code == 2 and "pass --owner or set FIXMEM_OWNER" in err


def test_promote_writes_the_fix_as_a_note_once(
    repo: Path, data_dir: Path, log: list[FixEntry], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "notes", "promote", log[0].id, "--kind", "gotcha", "-w", str(repo), *store_args(data_dir)
    )
    assert code == 0, err
    assert f"promoted {log[0].id} as gotcha" in out
    note = parse_memory((repo / MEMORY).read_text()).notes[0]
    assert (note.kind, note.subject, note.commit) == ("gotcha", log[0].task, "c" * 40)  # the fix's commit
    assert f"Promoted from {log[0].id} (fixed, " in note.body
    # A fix without a commit is stamped with the workspace's HEAD; a chosen subject is kept.
    code, _, _ = run(
        capsys,
        "notes",
        "promote",
        log[4].id,
        "-k",
        "convention",
        "-s",
        "retry the login",
        "-w",
        str(repo),
        *store_args(data_dir),
    )
    assert code == 0
    second = parse_memory((repo / MEMORY).read_text()).notes[1]
    assert (second.subject, second.commit) == ("retry the login", git(repo, "rev-parse", "--short", "HEAD"))
    # Promoted fixes leave the queue, and promoting one again is refused.
    _, out, _ = run(capsys, "notes", "suggest", "-p", "web", "-w", str(repo), *store_args(data_dir))
    assert "no suggestions" in out
    code, _, err = run(
        capsys, "notes", "promote", log[0].id, "-k", "gotcha", "-w", str(repo), *store_args(data_dir)
    )
    assert code == 1 and "already promoted" in err and f"{repo / MEMORY}:1" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["fix-0000000000000000", "-k", "gotcha"],
            1,
            "no fix fix-0000000000000000 in any project of 'alice'",
        ),
        (
            ["fix-0000000000000000", "-k", "gotcha", "-p", "web"],
            1,
            "no fix fix-0000000000000000 in project 'web'",
        ),
    ],
)
def test_promote_says_what_is_wrong(
    repo: Path,
    data_dir: Path,
    log: list[FixEntry],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    message: str,
) -> None:
    got, _, err = run(capsys, "notes", "promote", *args, "-w", str(repo), *store_args(data_dir))
    assert (got, message in err) == (code, True)
    got, _, err = run(
        capsys, "notes", "promote", log[0].id, "-k", "diary", "-w", str(repo), *store_args(data_dir)
    )
    assert got == 2 and "'diary' is not a kind of note" in err
    assert not (repo / MEMORY).exists()


def test_export_markdown_to_stdout(
    data_dir: Path, log: list[FixEntry], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "export", "-p", "web", "--format", "markdown", *store_args(data_dir))
    assert code == 0
    assert out.startswith("# Fix log: web\n")
    assert "## `src/users.py`" in out and "### `KeyError: 'user'`" in out
    assert f"**regressed**: `{log[1].id}` failed again on" in out


def test_export_jsonl_then_import_round_trips(
    tmp_path: Path,
    data_dir: Path,
    log: list[FixEntry],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dump = tmp_path / "web.jsonl"
    code, _, err = run(
        capsys, "export", "-p", "web", "--format", "jsonl", "-o", str(dump), *store_args(data_dir)
    )
    assert code == 0 and "exported 5 entries" in err
    other = tmp_path / "other"
    monkeypatch.setenv("FIXMEM_OWNER", "alice")
    code, out, err = run(capsys, "import", str(dump), "--data-dir", str(other))
    assert code == 0, err
    assert "imported 5 entries into 'web' (0 already present, 0 dropped by rotation)" in out
    assert fix_store(other).read("alice", "web").entries == log
    code, out, _ = run(capsys, "import", str(dump), "--data-dir", str(other), "-p", "web")
    assert "imported 0 entries into 'web' (5 already present" in out


def test_import_of_a_bad_file_names_each_line_and_imports_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "bad.jsonl"
    dump.write_bytes(b"".join(jsonl_lines([fix(1)])) + b"not json\n" + b'{"id": 1}\n')
    code, _, err = run(capsys, "import", str(dump), "--owner", "alice", "--data-dir", str(tmp_path / "d"))
    assert code == 1
    assert f"{dump}:2: not JSON" in err and f"{dump}:3: " in err
    assert "2 invalid line(s); nothing was imported" in err
    assert fix_store(tmp_path / "d").projects("alice") == []


# -- the combined block for a workspace -----------------------------------------------------------------


def test_workspace_prompt_block_puts_notes_first_and_marks_history_rewrites(
    repo: Path, data_dir: Path, log: list[FixEntry], capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "notes", "add", "-w", str(repo), "-k", "gotcha", "-s", "users are cached per request")
    git(repo, "commit", "-q", "--amend", "-m", "rewritten")
    run(capsys, "notes", "add", "-w", str(repo), "-k", "decision", "-s", "login retries once")
    recalled = fix_store(data_dir).recall(
        "alice", "web", "login timed out", errors=["TimeoutError"], now=T0 + 9e5
    )
    assert recalled
    block = workspace_prompt_block(repo, recalled, 600, now=T0 + 9e5)
    assert estimate_tokens(block) <= 600
    lines = block.split("\n")
    assert lines[0].startswith("Notes written by people")
    assert lines[1].startswith("- decision: login retries once")
    assert lines[2].startswith("- gotcha: users are cached per request") and lines[2].endswith(
        NOTE_STALE_MARK
    )
    assert "Past fixes in this project:" in lines
    assert workspace_prompt_block(None, recalled, 600, now=T0 + 9e5) == prompt_block(
        recalled, 600, now=T0 + 9e5
    )


def test_workspace_prompt_block_survives_an_unreadable_memory_file(repo: Path) -> None:
    (repo / MEMORY).parent.mkdir()
    (repo / MEMORY).write_bytes(b"## gotcha: \xff\n")
    block = workspace_prompt_block(repo, [], 600, now=T0)
    assert block.endswith("(1 block in the memory file could not be read)")


def _append_many(workspace: str, writer: int) -> None:
    for i in range(10):
        note = new_note(
            "convention", f"writer {writer} note {i}", f"body {writer}/{i}", learned=None, commit=None
        )
        append_note(Path(workspace), note)


def test_concurrent_appends_keep_every_note_whole(tmp_path: Path) -> None:
    with ProcessPoolExecutor(max_workers=4) as pool:
        list(pool.map(_append_many, [str(tmp_path)] * 6, range(6)))
    memory = parse_memory((tmp_path / MEMORY).read_text())
    assert memory.malformed == ()
    assert sorted(n.subject for n in memory.notes) == sorted(
        f"writer {w} note {i}" for w in range(6) for i in range(10)
    )
    assert all(n.body == "body " + n.subject.split()[1] + "/" + n.subject.split()[3] for n in memory.notes)
