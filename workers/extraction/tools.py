"""Tool families: which harness tool names are shells, edits, writes, patches or reads.

Pure. Tool names differ per harness (``bash`` / ``Bash`` / ``CmdRun`` / ``execute_command``;
``str_replace_editor`` / ``Edit`` / ``MultiEdit`` …); one table maps them to a ``Family``. Unknown tools are
``OTHER``: still searched for diffs and paths, never a crash.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache
from typing import Any


class Family(StrEnum):
    """What a tool call does to the workspace."""

    SHELL = "shell"
    EDIT = "edit"
    WRITE = "write"
    PATCH = "patch"
    READ = "read"
    PYTHON = "python"  # a Python cell (OpenHands run_ipython): its code may write files
    OTHER = "other"


_FAMILIES: dict[str, Family] = {
    **dict.fromkeys(
        ("bash", "shell", "run", "run_command", "execute_command", "exec_command", "terminal", "cmdrun"),
        Family.SHELL,
    ),
    **dict.fromkeys(("execute_bash", "run_shell_command", "local_shell", "container.exec"), Family.SHELL),
    **dict.fromkeys(
        (
            "edit",
            "edit_file",
            "str_replace",
            "str_replace_editor",
            "str_replace_based_edit_tool",
            "multiedit",
        ),
        Family.EDIT,
    ),
    **dict.fromkeys(("replace", "insert", "notebookedit", "file_edit", "fileedit"), Family.EDIT),
    **dict.fromkeys(
        ("write", "write_file", "create_file", "create", "filewrite", "file_write"), Family.WRITE
    ),
    **dict.fromkeys(("apply_patch", "patch", "applypatch"), Family.PATCH),
    **dict.fromkeys(
        ("read", "read_file", "view", "view_file", "cat", "open", "fileread", "file_read"), Family.READ
    ),
    **dict.fromkeys(
        ("grep", "glob", "ls", "list_dir", "search", "find_file", "webfetch", "websearch"), Family.READ
    ),
    **dict.fromkeys(
        ("goto", "scroll_up", "scroll_down", "search_dir", "search_file", "filemap", "think"), Family.READ
    ),
    **dict.fromkeys(("run_ipython", "ipython", "ipythonrun", "python", "jupyter"), Family.PYTHON),
}

# The keys a structured tool input names its file by.
PATH_KEYS = ("path", "file_path", "filePath", "filename", "target_file", "file", "notebook_path")
# str_replace_editor-style tools carry a sub-command; these only look.
_READ_SUBCOMMANDS = {"view", "read", "list", "view_range"}
_SHELL_KEYS = ("command", "cmd", "script", "commands")
_PATCH_KEYS = ("patch", "input", "diff", "content", "command")

# What failed edit results say (OpenHands, SWE-agent, Claude Code, Aider), checked on the first lines:
# shapes at the very start, and phrases anywhere in the head. The phrases are plain substring tests (C
# speed): one unanchored regex alternation was a visible share of extraction (docs/performance.md).
_EDIT_FAILED_START = re.compile(
    r"\s*(?:ERROR:|Error:|<tool_use_error>|\[?Your proposed edit|\[No exact match|File does not exist)"
)
_EDIT_FAILED_PHRASES = (
    "No replacement was performed",
    "did not appear verbatim",
    "proposed edit has introduced new syntax error",
    "No exact match found",
    "String to replace not found",
    "old_str` is required",
    "Invalid `path` parameter",
)
_FOUND_MATCHES = re.compile(r"Found \d+ matches of the string to replace")


def family_of(tool: str, arguments: dict[str, Any]) -> Family:
    """The family of a tool call; a read sub-command of an edit tool (``view``) is a read."""
    sub = arguments.get("command")
    return _family(tool, sub if isinstance(sub, str) and len(sub) <= 32 else None)


@lru_cache(maxsize=4096)
def _family(tool: str, sub: str | None) -> Family:
    """``family_of`` for a tool name and a short ``command`` argument (memoized: a turn asks many times)."""
    name = tool.strip().lower()
    family = _FAMILIES.get(name)
    if family is None:
        family = _FAMILIES.get(name.rsplit(".", 1)[-1].rsplit("__", 1)[-1], Family.OTHER)
    if family in {Family.EDIT, Family.WRITE} and sub is not None and sub.strip().lower() in _READ_SUBCOMMANDS:
        return Family.READ
    return family


def path_of(arguments: dict[str, Any]) -> str | None:
    """The file a structured tool input names, if any."""
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def shell_command_of(arguments: dict[str, Any]) -> str:
    """The command text of a shell tool input (a list of argv words is joined)."""
    for key in _SHELL_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            words: list[str] = value
            if len(words) >= 3 and words[0] in {"bash", "sh", "zsh"} and words[1] in {"-lc", "-c"}:
                return words[2]
            return " ".join(words)
    return ""


def strings_of(value: Any, limit: int) -> list[str]:
    """Every string inside a JSON-shaped value, depth first, until ``limit`` characters are collected."""
    found: list[str] = []
    budget = limit
    stack = [value]
    while stack and budget > 0:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item[:budget])
            budget -= len(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def edit_failed(output: str, exit_code: int | None, ok: bool | None) -> bool:
    """Whether an edit/write/patch call reported that it changed nothing."""
    if ok is False or (exit_code is not None and exit_code != 0):
        return True
    head = output[:600]
    if _EDIT_FAILED_START.match(head) or any(phrase in head for phrase in _EDIT_FAILED_PHRASES):
        return True
    return "matches of the string to replace" in head and bool(_FOUND_MATCHES.search(head))
