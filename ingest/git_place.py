"""Where a turn sits in git: the checkout's HEAD and whether its working tree is dirty, for
``harness_meta.commit_start`` / ``commit_end`` / ``dirty`` (the verdict linker's first clue).

For the hooks and the publisher SDK: ``head(ws)`` when a turn starts, ``place(ws)`` when it ends. Never
raises: without ``git``, outside a repository, before the first commit or past ``deadline_s``, a value is
left out rather than guessed.
"""

from __future__ import annotations

import subprocess
from typing import Any

DEADLINE_S = 2.0


def git_output(workdir: str, *args: str, timeout: float = DEADLINE_S) -> str | None:
    """stdout of ``git -C workdir args`` (UTF-8, errors replaced); None when git is missing, the command
    fails or it takes longer than ``timeout`` seconds."""
    try:
        done = subprocess.run(
            ["git", "-C", workdir, *args], capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def head(workdir: str, *, deadline_s: float = DEADLINE_S) -> str | None:
    """The full sha of ``HEAD`` in ``workdir``; None when there is none."""
    if not workdir:
        return None
    out = git_output(workdir, "rev-parse", "--verify", "--quiet", "HEAD", timeout=deadline_s)
    sha = (out or "").strip()
    return sha or None


def place(workdir: str, *, deadline_s: float = DEADLINE_S) -> dict[str, Any]:
    """``{"commit_end": sha, "dirty": bool}`` for ``workdir`` now (what is known of it; {} outside git).
    Dirty: ``git status --porcelain`` lists a tracked change or an untracked file (ignored files not)."""
    sha = head(workdir, deadline_s=deadline_s)
    if sha is None:
        return {}
    status = git_output(workdir, "status", "--porcelain", "--untracked-files=normal", timeout=deadline_s)
    return {"commit_end": sha} if status is None else {"commit_end": sha, "dirty": bool(status.strip())}
