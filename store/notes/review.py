"""The review queue's memory: what a person answered to the notes suggested from a project's log.

``fixmem notes suggest`` proposes notes from a project's log (``store.notes.suggest``); the web UI lets a
person approve (perhaps edited), or reject each. What they decided is kept per owner and project in
``<data_dir>/ui/review/<owner-safe>/<project-safe>.json`` (names made safe by ``store.paths.safe_name``;
written by temp file + ``os.replace`` under a flock on the sibling ``.lock``): rejected fix ids, so a
suggestion does not come back, and the approved notes that could not be written to a workspace, offered
as a download of the notes file. A thin file shell like ``store.notes.workspace``; the rest is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from store.notes.grammar import append_separator
from store.notes.suggest import Suggestion
from store.paths import safe_name
from store.persist.fsio import ensure_dir, flock, replace_atomically

REVIEW_DIR = Path("ui") / "review"


@dataclass
class ReviewState:
    """A project's answered suggestions: rejected fix ids, and approved notes not written anywhere yet."""

    rejected: list[str] = field(default_factory=list)
    approved: list[dict[str, str]] = field(default_factory=list)  # {"fix_id", "note"} (the note's text)

    def answered(self) -> set[str]:
        """Fix ids a person rejected or approved here."""
        return {*self.rejected, *(a["fix_id"] for a in self.approved)}

    def reject(self, fix_id: str) -> None:
        """Remember that the suggestion of ``fix_id`` was rejected (once)."""
        if fix_id not in self.rejected:
            self.rejected.append(fix_id)

    def approve(self, fix_id: str, note: str) -> None:
        """Keep ``note`` (its text) as the approved note of ``fix_id``, replacing an earlier one."""
        self.approved = [a for a in self.approved if a["fix_id"] != fix_id] + [
            {"fix_id": fix_id, "note": note}
        ]


def state_path(data_dir: Path, owner: str, project: str) -> Path:
    """Where a project's review state lives (raises InvalidKey for an empty owner or project)."""
    return data_dir / REVIEW_DIR / safe_name(owner, what="owner") / (safe_name(project) + ".json")


def read_state(path: Path) -> ReviewState:
    """The state stored at ``path`` (empty when there is none, or it is not what this module writes)."""
    try:
        raw = orjson.loads(path.read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return ReviewState()
    if not isinstance(raw, dict):
        return ReviewState()
    rejected = [str(x) for x in raw.get("rejected", []) if isinstance(x, str)]
    approved = [
        {"fix_id": str(a["fix_id"]), "note": str(a["note"])}
        for a in raw.get("approved", [])
        if isinstance(a, dict) and "fix_id" in a and "note" in a
    ]
    return ReviewState(rejected, approved)


def update_state(path: Path, change: Callable[[ReviewState], None]) -> ReviewState:
    """Apply ``change`` to the stored state under the project's flock and store it atomically.

    Raises StoreUnavailable (naming the path) when it cannot be written.
    """
    ensure_dir(path.parent)
    with flock(path.with_suffix(".lock")):
        state = read_state(path)
        change(state)
        data = {"rejected": state.rejected, "approved": state.approved}
        replace_atomically(path, orjson.dumps(data, option=orjson.OPT_INDENT_2))
    return state


def pending(found: Sequence[Suggestion], state: ReviewState) -> list[Suggestion]:
    """The suggestions nobody has answered here yet."""
    answered = state.answered()
    return [s for s in found if s.fix_id not in answered]


def notes_file(state: ReviewState) -> str:
    """The approved notes as a ``.fixmem/memory.md`` (to download, or append to the real one). Pure."""
    text = ""
    for item in state.approved:
        text += append_separator(text[-2:]) + item["note"]
    return text
