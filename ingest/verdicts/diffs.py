"""A commit as values: its sha, parents, time, message, files and normalized changed lines (pure).

``parse_log(text)`` reads what ``git log -p -U0 --no-renames --format=<LOG_FORMAT>`` prints (the shell,
``ingest.verdicts.git``, runs it) and returns one ``CommitDiff`` per commit. Rules this file obeys:

- A changed line is normalized: whitespace stripped at both ends; blank lines are dropped (re-indenting
  code changes no line, so a revert that re-indents is still a revert).
- At most ``MAX_LINES`` added and ``MAX_LINES`` removed lines are kept per commit, in diff order (a
  vendored tree or a mass rename is no fix to undo; its head is enough to see it).
- The file header (``---`` / ``+++`` after ``diff --git``) is told from a changed line that starts with
  ``--`` or ``++`` by position: header lines come before the first ``@@`` of a file only.
- No subprocess, no clock, no files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

MAX_LINES = 300  # added (and removed) lines kept per commit
RECORD = "\x1e"
UNIT = "\x1f"
# %x1e starts a record; sha, parents, committer time, author time, the raw message, then the patch.
LOG_FORMAT = "%x1e%H%x1f%P%x1f%ct%x1f%at%x1f%B%x1f"
_DIFF_GIT = re.compile(r"^diff --git a/(.*) b/(.*)$")


@dataclass(frozen=True)
class CommitDiff:
    """One commit: ``added`` / ``removed`` are its normalized changed lines (at most ``MAX_LINES`` each)."""

    sha: str
    parents: tuple[str, ...] = ()
    ts: float = 0.0  # committer time, unix seconds
    authored: float = 0.0  # author time, unix seconds (a rebase or squash keeps it)
    message: str = ""
    files: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    truncated: bool = False  # more changed lines than kept
    extra: dict[str, str] = field(default_factory=dict, compare=False)  # e.g. the patch-id

    @property
    def is_merge(self) -> bool:
        """Whether the commit has more than one parent."""
        return len(self.parents) > 1

    def hunks(self, limit: int) -> list[str]:
        """Up to ``limit`` changed lines, ``-old`` then ``+new`` strings (the wire form)."""
        lines = [f"-{line}" for line in self.removed] + [f"+{line}" for line in self.added]
        return lines[:limit]


def normalize(lines: Iterable[str]) -> list[str]:
    """The lines stripped at both ends, blank ones dropped."""
    return [s for s in (line.strip() for line in lines) if s]


def parse_log(text: str) -> list[CommitDiff]:
    """The commits of a ``git log -p -U0 --no-renames --format=LOG_FORMAT`` output, in its order."""
    return [commit for commit in map(_parse_record, text.split(RECORD)) if commit is not None]


def _parse_record(record: str) -> CommitDiff | None:
    parts = record.split(UNIT, 5)
    if len(parts) < 6 or not re.fullmatch(r"[0-9a-f]{7,64}", parts[0].strip()):
        return None
    sha, parents, committed, authored, message, patch = parts
    files, added, removed, truncated = _parse_patch(patch)
    return CommitDiff(
        sha=sha.strip(),
        parents=tuple(parents.split()),
        ts=float(committed or 0),
        authored=float(authored or 0),
        message=message.strip(),
        files=files,
        added=added,
        removed=removed,
        truncated=truncated,
    )


def _parse_patch(patch: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]:
    files: list[str] = []
    added: list[str] = []
    removed: list[str] = []
    truncated = False
    for kind, value in _patch_lines(patch):
        if kind == "file":
            if value not in files:
                files.append(value)
            continue
        line = value.strip()
        if not line:
            continue
        bucket = added if kind == "+" else removed
        if len(bucket) < MAX_LINES:
            bucket.append(line)
        else:
            truncated = True
    return tuple(files), tuple(added), tuple(removed), truncated


def _patch_lines(patch: str) -> Iterator[tuple[str, str]]:
    """``("file", path)`` per file, then ``("+", text)`` / ``("-", text)`` per changed line."""
    in_header = False
    for line in patch.splitlines():
        match = _DIFF_GIT.match(line)
        if match:
            in_header = True
            yield "file", match[2]
        elif line.startswith("@@"):
            in_header = False
        elif not in_header and line[:1] in ("+", "-"):
            yield line[0], line[1:]
