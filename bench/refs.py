"""Build a git ref as a benchmark subject: its tree (``git archive``) and a venv with it installed.

``built(ref)`` returns a ``Built``: the commit, the tree, and the venv's ``python`` and ``bin``. The package
is installed the way a user gets it (``pip install <tree>``, not editable: a wheel, so a tree whose wheel
carries the compiled extraction core runs it), with its own dependencies as that tree declares them.
Builds are cached by commit under ``$FIXMEM_AB_CACHE`` (default ``~/.cache/fixmem-ab``): the second run
of an A/B costs no install. The special ref ``WORKTREE`` is the checkout as it is on disk, uncommitted
changes included (rebuilt every time: it has no commit to key a cache on).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKTREE = "WORKTREE"


@dataclass(frozen=True)
class Built:
    """One ref, built: ``ref`` as asked, its ``commit``, ``tree`` (the sources), ``venv`` (installed)."""

    ref: str
    commit: str
    tree: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def cache_dir() -> Path:
    return Path(os.environ.get("FIXMEM_AB_CACHE", Path.home() / ".cache" / "fixmem-ab"))


def commit_of(ref: str) -> str:
    """The full commit id ``ref`` names in this repository."""
    out = subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"not a commit in {ROOT}: {ref!r} ({out.stderr.strip()})")
    return out.stdout.strip()


def _export(commit: str, into: Path) -> None:
    """``git archive`` of ``commit`` unpacked into ``into``."""
    into.mkdir(parents=True)
    with tempfile.TemporaryFile() as tar:
        subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, stdout=tar, check=True)
        tar.seek(0)
        with tarfile.open(fileobj=tar) as archive:
            archive.extractall(into, filter="data")


def _worktree_copy(into: Path) -> None:
    """The checkout's tracked and untracked-but-not-ignored files, as they are on disk, into ``into``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    for raw in filter(None, listed):
        source = ROOT / os.fsdecode(raw)
        if source.is_file():
            target = into / os.fsdecode(raw)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _install(tree: Path, venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    for args in (["--upgrade", "pip"], [str(tree)]):  # pip's warnings go to a log beside the venv
        with open(venv.parent / "pip.log", "ab") as log:
            subprocess.run([*pip, *args], check=True, cwd=tree.parent, stderr=log)


def exported(ref: str) -> Path:
    """``ref``'s sources only (no venv), for benchmarks that run a tree with this interpreter on
    ``PYTHONPATH``: cached by commit beside its build; ``WORKTREE`` is the checkout itself."""
    if ref == WORKTREE:
        return ROOT
    tree = cache_dir() / commit_of(ref) / "tree"
    if not tree.exists():
        _export(commit_of(ref), tree)
    return tree


def built(ref: str) -> Built:
    """``ref`` exported and installed into its own venv (cached by commit, except ``WORKTREE``)."""
    if ref == WORKTREE:
        home = Path(tempfile.mkdtemp(prefix="fixmem-ab-worktree-"))
        _worktree_copy(home / "tree")
        _install(home / "tree", home / "venv")
        return Built(ref, WORKTREE, home / "tree", home / "venv")
    commit = commit_of(ref)
    home = cache_dir() / commit
    done = home / ".built"
    if not done.exists():
        shutil.rmtree(home, ignore_errors=True)
        _export(commit, home / "tree")
        _install(home / "tree", home / "venv")
        done.touch()
    return Built(ref, commit, home / "tree", home / "venv")
