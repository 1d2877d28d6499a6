"""``fixmem hook claude-code --check`` and ``fixmem doctor``: what the installed hook would do right now,
from another shell: the pinned owner, the project key, where it reads and whether that answers, its last
calls; exit 1 when it would inject nothing for a reason the user can fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixmem.cli import main
from fixmem.hooks.check import describe_call, pinned_in
from fixmem.hooks.session import CALLS_KEPT, note_call, recent_calls
from tests.fixmem.hooks.conftest import OWNER, install_and_prompt_from_another_shell

ROOT = Path(__file__).resolve().parents[3]


def test_pinned_assignments_are_read_from_the_command() -> None:
    command = "FIXMEM_DATA_DIR='/d ir' FIXMEM_OWNER=alice /venv/bin/python -S /x/__main__.py claude-code"
    assert pinned_in(command) == {"FIXMEM_DATA_DIR": "/d ir", "FIXMEM_OWNER": "alice"}
    assert pinned_in("fixmem-hook claude-code") == {}
    assert pinned_in("FIXMEM_OWNER='unclosed fixmem-hook") == {}


def test_a_call_reads_as_a_line() -> None:
    call = {"ts": 0, "event": "UserPromptSubmit", "project": "p", "injected": ["a", "b"], "ms": 12.5}
    assert describe_call(call) == "1970-01-01 00:00:00Z UserPromptSubmit p: injected 2 fix(es) (12.5 ms)"
    quiet = {"ts": 0, "event": "PostToolUse", "result": "no relevant fix", "ms": 3}
    assert describe_call(quiet).endswith("PostToolUse : no relevant fix (3 ms)")


def test_the_call_log_keeps_the_last_calls(tmp_path: Path) -> None:
    for n in range(300):
        note_call(tmp_path, {"n": n, "pad": "x" * 200})
    calls = recent_calls(tmp_path)
    assert [c["n"] for c in calls] == list(range(300 - CALLS_KEPT, 300))
    assert (tmp_path / "calls.jsonl").stat().st_size < 64 << 10


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fixmem", *argv], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_check_says_what_the_installed_hook_does_from_another_shell(
    tmp_path: Path, seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, other, hook = install_and_prompt_from_another_shell(tmp_path, seeded, monkeypatch)
    other["PYTHONPATH"] = str(ROOT)
    assert "apply_discount" in hook.stdout, hook

    checked = _run(["hook", "claude-code", "--check"], other, repo)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert any(line.startswith("installed") and "settings.local.json" in line for line in lines)
    assert any(line.split()[:2] == ["owner", OWNER] for line in lines)  # pinned: not bob
    assert any(line.split()[:2] == ["project", "github.com/acme/widgets"] for line in lines)
    assert any(line.startswith("reachable") and "yes" in line for line in lines)
    assert any("UserPromptSubmit github.com/acme/widgets: injected" in line for line in lines)

    doctor = _run(["doctor"], other | {"FIXMEM_OWNER": OWNER, "FIXMEM_DATA_DIR": str(seeded)}, repo)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "hook claude-code" in doctor.stdout and "reachable  yes" in doctor.stdout

    # pinned to an API that does not answer: the hook would inject nothing, and the check says why
    assert main(["uninstall", "claude-code", "--project-dir", str(repo)]) == 0
    monkeypatch.setenv("FIXMEM_API_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("FIXMEM_API_TOKEN", "a-token-that-goes-nowhere")
    assert main(["install", "claude-code", "--project-dir", str(repo)]) == 0
    broken = _run(["hook", "claude-code", "--check"], other, repo)
    assert broken.returncode == 1
    assert "reachable  no: API unreachable at http://127.0.0.1:9" in broken.stdout


def test_check_without_an_installed_hook_says_how(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")} | {"HOME": str(tmp_path)}
    done = _run(["hook", "claude-code", "--check", "--project-dir", str(tmp_path)], env, tmp_path)
    assert done.returncode == 1 and "fixmem install claude-code" in done.stdout
