"""A small real git checkout for the localization tests: Python, Go, TypeScript and Rust sources."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SOURCES = {
    "invoicer/totals.py": (
        'def apply_discount(total, quantity):\n    raise ValueError("quantity must be positive")\n'
    ),
    "invoicer/csv_io.py": "def parse_csv(text):\n    return text.split(',')\n",
    "server/main.go": (
        'package main\n\nfunc StartServer() error {\n\treturn fmt.Errorf("port already bound")\n}\n'
    ),
    "web/login.ts": 'export function renderLoginForm(): string {\n  return "login times out";\n}\n',
    "core/src/lib.rs": 'pub fn merge_intervals() {\n    panic!("intervals overlap badly");\n}\n',
    "README.md": "# widgets\n",
}


def git(root: Path, *args: str) -> str:
    exe = shutil.which("git")
    assert exe is not None
    env_args = ["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"]
    done = subprocess.run(
        [exe, "-C", str(root), *env_args, *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def make_checkout(root: Path, sources: dict[str, str] | None = None) -> Path:
    """``root`` as a git checkout with ``sources`` (default ``SOURCES``) committed; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    for name, text in (SOURCES if sources is None else sources).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return root


def commit_all(root: Path, message: str = "change") -> str:
    """Commit every change of ``root``; the new HEAD."""
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()
