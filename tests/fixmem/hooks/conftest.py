"""Shared fixtures of the hook tests: a store with a few fixes, a git checkout with an origin."""

from __future__ import annotations

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
