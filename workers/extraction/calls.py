"""One classification per tool event, made once per turn and read by files, errors, outcome and changes.

Pure. ``classify`` turns a turn's tool events into ``Call`` records: the event's index, its family
(``tools.family_of``) and its command text (``tools.shell_command_of``, raw and clipped to
``max_input_chars``). The values more than one module needs and that cost something are derived on first
use and kept on the record: the output's scan window (``limits.scan_window``), whether an edit reported
failure (``tools.edit_failed``), the full ``git diff`` the call printed (``diffs.parse_patch``) and the
symbols of a structured edit (``symbols.symbols_from_edit``). Before this record each module re-derived
them from the raw event: a 20-event turn asked for a family ~37 times
(docs/decisions/0037-extraction-in-one-pass.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ingest.schema import ToolEvent
from workers.extraction.diffs import DiffFile, parse_patch
from workers.extraction.limits import Limits, clip, scan_window
from workers.extraction.shell import parse_commands
from workers.extraction.symbols import symbols_from_edit
from workers.extraction.tools import Family, edit_failed, family_of, shell_command_of

_DIFF_VIEW_FLAGS = {
    "--stat",
    "--name-only",
    "--name-status",
    "--shortstat",
    "--numstat",
    "--check",
    "--no-patch",
    "-s",
    "--summary",
    "--quiet",
    "--exit-code",
}
_DIFF_REVS = re.compile(r"^(?:HEAD|@|[0-9a-f]{7,40})(?:[~^]\d*)*$")


def prints_full_diff(command: str) -> bool:
    """Whether a command line prints the whole working-tree diff (``git diff``, ``--cached``, ``submit``)."""
    if "diff" not in command and "submit" not in command:
        return False
    for cmd in parse_commands(command):
        argv = list(cmd.words)
        if argv[:1] == ["submit"]:
            return True
        if argv[:1] != ["git"]:
            continue
        args = argv[1:]
        while args and args[0].startswith("-"):
            flag = args.pop(0)
            if flag in {"-C", "-c"} and args:
                args.pop(0)
        if args[:1] != ["diff"] or _DIFF_VIEW_FLAGS & set(args):
            continue
        rest = [a for a in args[1:] if a != "--"]
        if all(a.startswith("-") or _DIFF_REVS.match(a) for a in rest):
            return True
    return False


class Call:
    """One tool event as extraction sees it; the lazily derived values are computed once each."""

    __slots__ = ("_diff", "_failed", "_symbols", "_window", "command", "event", "family", "index", "limits",
                 "raw_command", "tool")  # fmt: skip

    def __init__(self, index: int, event: ToolEvent, limits: Limits) -> None:
        self.index = index
        self.event = event
        self.limits = limits
        self.family = family_of(event.tool, event.input)
        self.tool = event.tool.strip().lower()
        self.raw_command = shell_command_of(event.input)  # unclipped: ``_mines_errors`` reads its own head
        self.command = clip(self.raw_command, limits.max_input_chars)
        self._window: str | None = None
        self._failed: bool | None = None
        self._diff: list[DiffFile] | None = None
        self._symbols: dict[tuple[str, str, str], list[str]] = {}

    @property
    def shell_like(self) -> bool:
        """Whether files and changes read this call as a command line (a shell, or SWE-agent ``submit``)."""
        return self.family is Family.SHELL or self.tool == "submit"

    def window(self) -> str:
        """``scan_window`` of the output (computed once)."""
        if self._window is None:
            self._window = scan_window(self.event.output, self.limits)
        return self._window

    def failed(self) -> bool:
        """``edit_failed`` of the call (computed once)."""
        if self._failed is None:
            event = self.event
            self._failed = edit_failed(event.output, event.exit_code, event.ok)
        return self._failed

    def full_diff(self) -> list[DiffFile]:
        """The files of the whole working-tree diff this command printed; [] when it prints none. Shared by
        files and changes: do not mutate it."""
        if self._diff is None:
            full = prints_full_diff(self.command or self.tool)
            self._diff = parse_patch(self.window()) if full else []
        return self._diff

    def edit_symbols(self, path: str, old: str, new: str) -> list[str]:
        """``symbols_from_edit`` with the output's head as the snippet; the result is shared, do not
        mutate it."""
        key = (path, old, new)
        found = self._symbols.get(key)
        if found is None:
            found = self._symbols[key] = symbols_from_edit(path, old, new, self.event.output[:20_000])
        return found


def classify(events: Sequence[ToolEvent], limits: Limits) -> list[Call]:
    """The ``Call`` of every event, in order (``index`` is the position in ``events``)."""
    return [Call(index, event, limits) for index, event in enumerate(events)]
