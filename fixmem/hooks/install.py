"""``fixmem install claude-code``: merge our hook entries into Claude Code's settings; ``uninstall``.

Where: ``<project>/.claude/settings.local.json`` by default (Claude Code's per-machine file, not
committed), with the environment of the install pinned in the command (``pinned``: owner, data dir, API
URL, where the token is, Redis URL), so that a Claude Code started from another terminal runs the hook as
the installing user; ``--shared``: ``<project>/.claude/settings.json`` (the file teams commit), the hook
found on PATH as ``fixmem-hook`` and nothing pinned; ``--user``: ``~/.claude/settings.json``, pinned.
Installing in one project file removes ours from the other (no hook runs twice); uninstalling cleans both.
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

from fixmem.hooks.config import HookConfig

# event -> matcher (None: the event takes no matcher). A matcher names only the tools the hook answers
# for (``fixmem.hooks.claude_code.plan``; a test checks both agree): every other tool call starts no
# process. A failed ``Bash`` comes as ``PostToolUseFailure``; a ``PostToolUse`` of ``Bash`` (every shell
# command, ~31 ms a process) is not listened to.
EVENTS: dict[str, str | None] = {
    "SessionStart": None,  # starts the local recall daemon, so that the first prompt finds it warm
    "UserPromptSubmit": None,
    "PostToolUse": "Read|Edit|Write",
    "PostToolUseFailure": "Bash",
    "Stop": None,
    "SubagentStop": None,
}
SHARED_COMMAND = "fixmem-hook claude-code"  # --shared: found on PATH, no absolute path in the team's file
TOKEN_FILE_NAME = "api-token"  # noqa: S105 - a file name. under <data_dir>/hooks/, 0600: where a pinned hook finds its API token
TIMEOUT_SECONDS = 10  # Claude Code's per-hook timeout; the hook answers in well under a second
MARKERS = (
    "fixmem-hook claude-code",
    "fixmem.hooks claude-code",
    "fixmem hook claude-code",
    "fixmem/hooks/__main__.py claude-code",
)


class InstallError(Exception):
    """Raised when the settings file cannot be read as a JSON object or written."""


def hook_command(pinned: Mapping[str, str] | None = None) -> str:
    """The command to install: this interpreter with ``-S`` on the file ``fixmem/hooks/__main__.py`` of
    this installation (no ``site``: ~15 ms less a call, see ``fixmem.hooks.__main__``), after the shell
    assignments of ``pinned`` (Claude Code runs a hook command through a shell)."""
    main_file = Path(__file__).resolve().with_name("__main__.py")
    assignments = "".join(f"{name}={shlex.quote(value)} " for name, value in sorted((pinned or {}).items()))
    return f"{assignments}{shlex.quote(sys.executable)} -S {shlex.quote(str(main_file))} claude-code"


def pinned(env: Mapping[str, str], token_file: str | None) -> dict[str, str]:
    """The ``FIXMEM_*`` variables a hook installed now must run with (absolute paths): the owner and data
    dir as ``env`` resolves them, the API URL and Redis URL when set, and ``token_file`` (where the API
    token is) when given. Never the token itself. Pure."""
    config = HookConfig.from_env(env)
    out = {"FIXMEM_OWNER": config.owner, "FIXMEM_DATA_DIR": os.path.abspath(config.data_dir)}
    if config.api_url:
        out["FIXMEM_API_URL"] = config.api_url
        if token_file:
            out["FIXMEM_API_TOKEN_FILE"] = os.path.abspath(token_file)
    if config.redis_url:
        out["FIXMEM_REDIS_URL"] = config.redis_url
    return out


def token_file_for(env: Mapping[str, str], *, write: bool) -> str | None:
    """Where a pinned hook finds the API token: ``FIXMEM_API_TOKEN_FILE`` when set, else (with
    ``FIXMEM_API_URL`` and ``FIXMEM_API_TOKEN`` set) ``<data_dir>/hooks/api-token``, written 0600 when
    ``write``; None without a token. Raises InstallError."""
    config = HookConfig.from_env(env)
    named = (env.get("FIXMEM_API_TOKEN_FILE") or "").strip()
    if named:
        return os.path.abspath(os.path.expanduser(named))
    token = (env.get("FIXMEM_API_TOKEN") or "").strip()
    if not (config.api_url and token):
        return None
    path = os.path.join(os.path.abspath(config.hooks_dir), TOKEN_FILE_NAME)
    if write:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(token + "\n")
            os.replace(path + ".tmp", path)
        except OSError as exc:
            raise InstallError(f"cannot write the API token to {path}: {exc}") from exc
    return path


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


def settings_path(scope: str, project_dir: Path, home: Path, *, shared: bool = False) -> Path:
    """``<project>/.claude/settings.local.json`` (``project``; ``settings.json`` when ``shared``) or
    ``~/.claude/settings.json`` (``user``)."""
    if scope == "user":
        return home / ".claude" / "settings.json"
    return project_dir / ".claude" / ("settings.json" if shared else "settings.local.json")


def settings_paths(scope: str, project_dir: Path, home: Path) -> list[Path]:
    """Every file of ``scope`` that may hold ours: the project's two, or the user's one."""
    if scope == "user":
        return [settings_path(scope, project_dir, home)]
    return [settings_path(scope, project_dir, home, shared=s) for s in (False, True)]


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
