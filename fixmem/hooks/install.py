"""``fixmem install claude-code``: merge our hook entries into ``.claude/settings.json``; ``uninstall``.

Pure core: ``merged(settings, command)`` and ``removed(settings)`` take the parsed settings and return
new ones; ``apply`` does the file I/O (temp file + ``os.replace``) and ``diff`` shows what would change.
Ours are the hook commands that run ``fixmem-hook claude-code`` / ``fixmem.hooks claude-code`` /
``fixmem hook claude-code``; every other hook, matcher group and setting of the file is kept as it was.
Installing twice changes nothing; installing with another command replaces ours in place.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Mapping
from copy import deepcopy
from pathlib import Path
from typing import Any

# event -> matcher (None: the event takes no matcher)
EVENTS: dict[str, str | None] = {
    "SessionStart": None,  # starts the local recall daemon, so that the first prompt finds it warm
    "UserPromptSubmit": None,
    "PostToolUse": "Read|Edit|Write|MultiEdit|Bash",
    "PostToolUseFailure": "Bash",
    "Stop": None,
    "SubagentStop": None,
}
TIMEOUT_SECONDS = 10  # Claude Code's per-hook timeout; the hook answers in well under a second
MARKERS = (
    "fixmem-hook claude-code",
    "fixmem.hooks claude-code",
    "fixmem hook claude-code",
    "fixmem/hooks/__main__.py claude-code",
)


class InstallError(Exception):
    """Raised when the settings file cannot be read as a JSON object or written."""


def hook_command() -> str:
    """The command to install: this interpreter with ``-S`` on the file ``fixmem/hooks/__main__.py`` of
    this installation (no ``site``: ~15 ms less a call, see ``fixmem.hooks.__main__``)."""
    main_file = Path(__file__).resolve().with_name("__main__.py")
    return f"{shlex.quote(sys.executable)} -S {shlex.quote(str(main_file))} claude-code"


def is_ours(hook: Any) -> bool:
    """Whether a hook entry is one we installed."""
    return (
        isinstance(hook, Mapping)
        and isinstance(hook.get("command"), str)
        and any(m in hook["command"] for m in MARKERS)
    )


def removed(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` without our hook entries (groups left empty and an empty ``hooks`` are dropped)."""
    out = deepcopy(dict(settings))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not is_ours(h)]
                if not inner and group["hooks"]:
                    continue  # the group held only ours
                kept.append({**group, "hooks": inner})
            else:
                kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def merged(settings: Mapping[str, Any], command: str) -> dict[str, Any]:
    """``settings`` with our hook entries (one group per event, ours replaced if present)."""
    out = removed(settings)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("the settings' hooks is not a JSON object")
    for event, matcher in EVENTS.items():
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}]
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InstallError(f"the settings' hooks.{event} is not a JSON array")
        groups.append(group)
    return out


def settings_path(scope: str, project_dir: Path, home: Path) -> Path:
    """``<project>/.claude/settings.json`` (``project``) or ``~/.claude/settings.json`` (``user``)."""
    return (home if scope == "user" else project_dir) / ".claude" / "settings.json"


def load(path: Path) -> dict[str, Any]:
    """The settings in ``path`` (``{}`` when it does not exist); raises InstallError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc}") from exc
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}): fix it or move it aside") from exc
    if not isinstance(doc, dict):
        raise InstallError(f"{path} does not hold a JSON object")
    return doc


def render(settings: Mapping[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def diff(path: Path, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A unified diff of the file's settings before and after ("" when unchanged)."""
    old = render(before) if before or path.exists() else ""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), render(after).splitlines(keepends=True), str(path), str(path)
        )
    )


def apply(path: Path, after: Mapping[str, Any]) -> None:
    """Write ``after`` to ``path`` atomically (directories created); raises InstallError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(render(after))
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except OSError as exc:
        raise InstallError(f"cannot write {path}: {exc}") from exc
