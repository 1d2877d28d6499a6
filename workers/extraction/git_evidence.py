"""Git's own word on which files a turn changed: the output of ``git status`` and ``git diff --stat``.

Pure. ``evidence_of(command, output)`` reads one shell call: when the command line is just a ``git status``
(long, ``-s``/``--short`` or ``--porcelain``) or a ``git diff --stat | --name-only | --name-status``
(optionally after ``cd``), its output lists the changed files. The result says which files it names and
what it covers: ``git status`` covers every file (tracked and untracked, unless ``-uno``); the ``git diff``
views cover tracked files only (a file the turn created is untracked and may be absent). A pathspec
narrows the cover to those paths. Output cut, piped or filtered (``| head``, ``| grep``) is no evidence.

``declared_patch(command, exit_code)`` reads the agent's own word on which files make its change: a
``git diff [--] <paths> > patch.txt`` writes the patch it will submit, limited to the paths it chose (the
submission step of mini-swe-agent 2's SWE-bench prompt: "listing only the source files you modified",
leaving its reproduction scripts and the unrelated fixes it needed to run the tests out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workers.extraction.shell import parse_commands

_STATUS_LONG = re.compile(
    r"^\t(?:(modified|new file|deleted|renamed|copied|typechange|both modified|both added):\s+)?(.+?)\s*$"
)
_PORCELAIN = re.compile(r"^([ MADRCUT?!]{2}) (.+)$")
_NAME_STATUS = re.compile(r"^([MADRCTUX])\d*\t(.+)$")
_STAT = re.compile(r"^ (\S.*?)\s+\|\s+(?:\d+|Bin)")
_DIFF_VIEWS = {"--stat", "--name-only", "--name-status", "--numstat"}
_MAX_OUTPUT_CHARS = 64 * 1024
_HEADERS = (
    "On branch",
    "HEAD detached",
    "Your branch",
    "Changes ",
    "Untracked files",
    "nothing ",
    "no changes",
)


@dataclass(frozen=True)
class GitEvidence:
    """Files git named as changed (raw, relative to ``cwd``), and what the listing covers."""

    files: tuple[str, ...]
    deleted: tuple[str, ...]
    untracked_dirs: tuple[str, ...]  # ``git status`` lists an untracked directory, not its files
    covers_untracked: bool
    pathspecs: tuple[str, ...]  # empty: the whole tree
    relative_to_cwd: bool  # long and short ``git status``; ``--porcelain`` and ``git diff`` use the root


def _git_view(command: str) -> tuple[str, list[str]] | None:
    """(``status`` | ``diff``, arguments) when the line is one git status / diff view and nothing else."""
    view: tuple[str, list[str]] | None = None
    for cmd in parse_commands(command):
        argv = list(cmd.words)
        if argv[:1] in (["cd"], ["pushd"]):
            continue
        if view is not None or cmd.piped or cmd.redirects or argv[:1] != ["git"]:
            return None
        args = argv[1:]
        while args and args[0].startswith("-"):
            flag = args.pop(0)
            if flag in {"-C", "-c"}:
                return None  # another directory or config: not worth resolving
        if args[:1] == ["status"]:
            view = ("status", args[1:])
        elif args[:1] == ["diff"] and _DIFF_VIEWS & set(args) and "--cached" not in args:
            rest = [a for a in args[1:] if not a.startswith("-") and a != "--"]
            if any(re.fullmatch(r"(?:HEAD|@|[0-9a-f]{7,40})(?:[~^]\d*)*(?:\.\.\S*)?", a) for a in rest):
                return None  # against a commit: says nothing about the working tree alone
            view = ("diff", args[1:])
        else:
            return None
    return view


def _pathspecs(args: list[str]) -> tuple[str, ...]:
    if "--" in args:
        return tuple(a for a in args[args.index("--") + 1 :] if a)
    return tuple(a for a in args if not a.startswith("-"))


def _unquote(path: str) -> str:
    return path[1:-1] if len(path) > 1 and path[0] == path[-1] == '"' else path


def _status(output: str) -> tuple[list[str], list[str], list[str]] | None:
    files: list[str] = []
    deleted: list[str] = []
    dirs: list[str] = []
    recognized = False
    for line in output.splitlines():
        if not line.strip():
            continue
        if line.startswith(_HEADERS) or line.startswith("  (use"):
            recognized = True
            continue
        long = _STATUS_LONG.match(line)
        short = None if long else _PORCELAIN.match(line)
        if long:
            state, path = long.group(1) or "untracked", long.group(2)
        elif short:
            code, path = short.group(1), short.group(2)
            state = "deleted" if "D" in code else ("untracked" if code == "??" else "modified")
            if code == "!!":
                continue
        else:
            return None  # not git's output (an error, a warning, something else printed)
        recognized = True
        if " -> " in path:  # renamed: old -> new
            old, path = path.split(" -> ", 1)
            deleted.append(_unquote(old))
        path = _unquote(path)
        if state == "deleted":
            deleted.append(path)
        elif path.endswith("/"):
            dirs.append(path)
        else:
            files.append(path)
    return (files, deleted, dirs) if recognized else None


def _diff_view(output: str, args: list[str]) -> tuple[list[str], list[str]] | None:
    files: list[str] = []
    deleted: list[str] = []
    for line in output.splitlines():
        if not line.strip():
            continue
        if "--name-status" in args:
            match = _NAME_STATUS.match(line)
            if not match:
                return None
            parts = match.group(2).split("\t")
            if match.group(1) == "D":
                deleted.append(parts[-1])
            else:
                files.append(parts[-1])
                deleted.extend(parts[:-1])
        elif "--name-only" in args:
            if "\t" in line or line.startswith(("warning:", "error:", "fatal:")):
                return None
            files.append(line.strip())
        elif "--numstat" in args:
            parts = line.split("\t")
            if len(parts) != 3:
                return None
            files.append(parts[2])
        else:
            match = _STAT.match(line)
            if match:
                path = match.group(1)
                if path.startswith("..."):
                    return None  # a cut path: the view is not readable whole
                files.append(path.split(" => ")[-1])
            elif not re.match(r"^ \d+ files? changed", line):
                return None
    return files, deleted


def evidence_of(command: str, output: str, exit_code: int | None) -> GitEvidence | None:
    """The files a ``git status`` / ``git diff`` view printed, or ``None`` when the call is not one."""
    if exit_code not in (0, None) or "git" not in command:
        return None
    view = _git_view(command)
    if view is None or len(output) > _MAX_OUTPUT_CHARS:  # a listing that long was cut by the harness
        return None
    kind, args = view
    specs = _pathspecs(args)
    if kind == "status":
        if {"-z", "--porcelain=v2", "--porcelain=2", "-b", "--branch"} & set(args) or any(
            a.startswith("--ignored") for a in args
        ):
            return None
        parsed = _status(output)
        if parsed is None:
            return None
        files, deleted, dirs = parsed
        covers_untracked = not any(a in {"-uno", "--untracked-files=no"} for a in args)
        porcelain = any(a.startswith("--porcelain") for a in args)
        return GitEvidence(tuple(files), tuple(deleted), tuple(dirs), covers_untracked, specs, not porcelain)
    diff = _diff_view(output, args)
    if diff is None:
        return None
    return GitEvidence(tuple(diff[0]), tuple(diff[1]), (), False, specs, False)


_REV = re.compile(r"(?:HEAD|@|[0-9a-f]{7,40})(?:[~^]\d*)*(?:\.\.\S*)?")
_DIFF_NOT_A_PATCH = {"--stat", "--name-only", "--name-status", "--numstat", "--shortstat", "--check", "-s"}


def declared_patch(command: str, exit_code: int | None) -> tuple[str, ...] | None:
    """The paths of the last ``git diff [--] <paths> > file`` of a line (the patch the agent writes out),
    or ``None``.

    The line must have succeeded; the command needs at least one path and neither a commit (against a
    commit it is not the working tree's change) nor a view flag (``--stat``), and must not be piped."""
    if exit_code not in (0, None) or "diff" not in command or ">" not in command:
        return None
    found: tuple[str, ...] | None = None
    for cmd in parse_commands(command):
        argv = list(cmd.words)
        if cmd.piped or argv[:2] != ["git", "diff"] or not any(op == ">" for op, _ in cmd.redirects):
            continue
        args = argv[2:]
        if _DIFF_NOT_A_PATCH & set(args) or (">", "/dev/null") in cmd.redirects:
            continue
        specs = (
            tuple(args[args.index("--") + 1 :]) if "--" in args else tuple(a for a in args if a[:1] != "-")
        )
        before = args[: args.index("--")] if "--" in args else args
        if specs and not any(_REV.fullmatch(a) for a in before if a[:1] != "-"):
            found = specs
    return found
