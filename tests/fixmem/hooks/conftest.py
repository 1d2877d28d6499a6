"""Shared fixtures of the hook tests: a store with a few fixes, a git checkout with an origin."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixmem.hooks.daemon_client import LOCK_NAME, daemon_running
from tests.configs import fix_store
from tests.store.factories import make_entry

OWNER, PROJECT = "alice", "github.com/acme/widgets"


@pytest.fixture(autouse=True)
def _stop_recall_daemons(tmp_path: Path) -> Iterator[None]:
    """Stop the recall daemons a test's hooks started under ``tmp_path`` (their pid is in the lock)."""
    yield
    for lock in tmp_path.rglob(LOCK_NAME):
        written = lock.read_text().split()
        if written and daemon_running(str(lock.parent)):
            os.kill(int(written[0]), signal.SIGTERM)


@pytest.fixture
def seeded(data_dir: Path) -> Path:
    """``data_dir`` with four fixes of PROJECT: a ZeroDivisionError, a dark theme, a CSV parser, a login."""
    fix_store(data_dir).append(
        OWNER,
        PROJECT,
        [
            make_entry(
                1,
                "fix ZeroDivisionError in apply_discount",
                files=["invoicer/totals.py"],
                errors=["ZeroDivisionError: division by zero"],
                project=PROJECT,
                solution="guard quantity == 0",
            ),
            make_entry(2, "add a dark theme to the settings page", files=["ui/theme.css"], project=PROJECT),
            make_entry(
                3,
                "parse_csv drops quoted commas",
                files=["src/csv_io.py"],
                errors=["AssertionError: assert ['a', '\"b'] == ['a', 'b,c']"],
                project=PROJECT,
                solution="use csv.reader instead of str.split",
            ),
            make_entry(4, "login times out after 30 seconds", files=["src/auth.py"], project=PROJECT),
        ],
    )
    return data_dir


def git_checkout(root: Path, origin: str) -> Path:
    """Make ``root`` a git checkout whose ``origin`` is ``origin``; returns ``root``."""
    git = shutil.which("git")
    assert git is not None
    subprocess.run([git, "init", "-q", str(root)], check=True)
    subprocess.run([git, "-C", str(root), "remote", "add", "origin", origin], check=True)
    return root


def install_and_prompt_from_another_shell(
    tmp_path: Path, seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]:
    """``fixmem install claude-code`` in a checkout from alice's shell (``seeded`` data dir), then the
    installed prompt hook run through ``/bin/sh`` from bob's (no ``FIXMEM_*``, no daemon): the checkout,
    bob's environment and the hook's run."""
    from fixmem.cli import main  # noqa: PLC0415 - the CLI only for the tests that install

    for name in [n for n in os.environ if n.startswith("FIXMEM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FIXMEM_OWNER", OWNER)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(seeded))
    repo = git_checkout(tmp_path / "widgets", "git@github.com:acme/widgets.git")
    assert main(["install", "claude-code", "--project-dir", str(repo)]) == 0
    settings = json.loads((repo / ".claude" / "settings.local.json").read_text())
    (command,) = [h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    other = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    other |= {"LOGNAME": "bob", "USER": "bob", "HOME": str(tmp_path / "bob")}
    other["FIXMEM_HOOK_DAEMON_IDLE_SECONDS"] = "0"  # recall in the hook process: no daemon left behind
    body = {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "cwd": str(repo),
            "transcript_path": "", "prompt": "ZeroDivisionError in apply_discount"}  # fmt: skip
    done = subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(body), env=other, capture_output=True, text=True,
        timeout=60, check=False, cwd=repo,
    )  # fmt: skip
    return repo, other, done
