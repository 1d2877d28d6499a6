"""Unified diffs and apply_patch envelopes: which files a patch touches, and its hunks.

Pure. ``parse_patch`` reads git diffs (``diff --git``, ``new file mode``, ``rename from/to``), plain unified
diffs (``--- a`` / ``+++ b``) and Codex-style envelopes (``*** Update File:``, ``*** Add File:``,
``*** Delete File:``, ``*** Move to:``). Hunk line counts are honoured, so a removed line that starts
with ``--`` is never mistaken for a file header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_GIT_HEADER = re.compile(r'^diff --git (?:"?a/(.+?)"? "?b/(.+?)"?|(\S+) (\S+))$')
_HUNK = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+ ?(.*)$")
_ENVELOPE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$")
_MOVE_TO = re.compile(r"^\*\*\* Move to: (.+?)\s*$")
_DIFF_HINT = re.compile(r"^(?:diff --git |--- |\*\*\* (?:Update|Add|Delete) File: )", re.MULTILINE)


@dataclass
class Hunk:
    """One hunk: the enclosing-definition text git printed after ``@@``, and its body lines."""

    context: str
    lines: list[str] = field(default_factory=list)


@dataclass
class DiffFile:
    """One file of a patch. ``path`` is the new path (the old one for a deletion)."""

    path: str
    status: str = "modified"  # modified | added | deleted | renamed
    old_path: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


def looks_like_patch(text: str) -> bool:
    """Cheap test: does ``text`` contain a diff or patch-envelope header line?"""
    return bool(_DIFF_HINT.search(text))


def _strip_side(path: str, prefix: str, git_style: bool) -> str | None:
    path = path.split("\t", 1)[0].strip().strip('"')
    if path == "/dev/null":
        return None
    if git_style and path.startswith(prefix):
        return path[len(prefix) :]
    return path


def _unified(lines: list[str], start: int, files: list[DiffFile]) -> int:
    """Parse a ``---``/``+++`` pair (or a git header) at ``start``; returns the next line index."""
    line = lines[start]
    current: DiffFile | None = None
    i = start
    git_style = False
    if line.startswith("diff --git "):
        git_style = True
        match = _GIT_HEADER.match(line)
        old = new = None
        if match:
            old, new = (
                (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            )
        current = DiffFile(path=new or old or "")
        i += 1
        while i < len(lines) and not lines[i].startswith(("@@", "diff --git ")):
            meta = lines[i]
            if meta.startswith("new file mode"):
                current.status = "added"
            elif meta.startswith("deleted file mode"):
                current.status = "deleted"
            elif meta.startswith("rename from "):
                current.old_path, current.status = meta[12:].strip(), "renamed"
            elif meta.startswith("rename to "):
                current.path = meta[10:].strip()
            elif meta.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
                old_side = _strip_side(meta[4:], "a/", True)
                new_side = _strip_side(lines[i + 1][4:], "b/", True)
                current.path = new_side or old_side or current.path
                current.status = (
                    "added" if old_side is None else "deleted" if new_side is None else current.status
                )
                i += 1
            elif not meta.startswith(
                ("index ", "old mode", "new mode", "similarity", "dissimilarity", "Binary")
            ):
                break
            i += 1
    else:
        plus = lines[i + 1]
        old_raw, new_raw = line[4:], plus[4:]
        git_style = old_raw.startswith("a/") and new_raw.startswith("b/")
        old_side = _strip_side(old_raw, "a/", git_style)
        new_side = _strip_side(new_raw, "b/", git_style)
        status = "added" if old_side is None else "deleted" if new_side is None else "modified"
        current = DiffFile(path=new_side or old_side or "", status=status)
        i += 2
    if current.path:
        files.append(current)
    while i < len(lines):
        match = _HUNK.match(lines[i])
        if not match:
            break
        old_left = int(match.group(2) or "1")
        new_left = int(match.group(4) or "1")
        hunk = Hunk(context=match.group(5).strip())
        i += 1
        while i < len(lines) and (old_left > 0 or new_left > 0):
            body = lines[i]
            tag = body[:1]
            if tag == "-":
                old_left -= 1
            elif tag == "+":
                new_left -= 1
            elif tag == " " or body == "":
                old_left -= 1
                new_left -= 1
            elif tag != "\\":
                break
            hunk.lines.append(body)
            i += 1
        while i < len(lines) and lines[i].startswith("\\"):
            i += 1
        current.hunks.append(hunk)
    return i


def _envelope(lines: list[str], start: int, files: list[DiffFile]) -> int:
    match = _ENVELOPE.match(lines[start])
    assert match is not None
    kind, path = match.group(1), match.group(2)
    current = DiffFile(path=path, status={"Update": "modified", "Add": "added", "Delete": "deleted"}[kind])
    files.append(current)
    i = start + 1
    hunk: Hunk | None = Hunk(context="") if kind == "Add" else None
    if hunk is not None:
        current.hunks.append(hunk)
    while i < len(lines) and not lines[i].startswith(
        ("*** Update File:", "*** Add File:", "*** Delete File:")
    ):
        body = lines[i]
        move = _MOVE_TO.match(body)
        if move:
            current.old_path, current.path, current.status = current.path, move.group(1), "renamed"
        elif body.startswith("@@"):
            hunk = Hunk(context=body[2:].strip().strip("@").strip())
            current.hunks.append(hunk)
        elif body.startswith("*** End Patch"):
            return i + 1
        elif body[:1] in {"+", "-", " "}:
            if hunk is None:
                hunk = Hunk(context="")
                current.hunks.append(hunk)
            hunk.lines.append(body)
        i += 1
    return i


def parse_patch(text: str) -> list[DiffFile]:
    """Every file of every diff or patch envelope in ``text``, in order of appearance."""
    if not looks_like_patch(text):
        return []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    files: list[DiffFile] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git ") or (
            line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            nxt = _unified(lines, i, files)
        elif _ENVELOPE.match(line):
            nxt = _envelope(lines, i, files)
        else:
            nxt = i + 1
        i = max(nxt, i + 1)
    return files
