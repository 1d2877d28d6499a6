"""The link of a verdict: what a judge knows about the turn it judged, instead of the turn's id.

Pure: values in, values out. A CI run, ``git`` or a reviewer knows a commit, a branch, a session, the files a
commit changed and the tests it ran; never fixmem's ``event_id``. ``VerdictLink`` carries that, and the
worker links it to entries (``workers.linker``). ``diff_hunks`` turns a unified diff into the ``hunks`` a link
carries, and ``normalize_line`` is the one normalization both sides use (the link's hunks and an entry's
``changes``), so they compare equal whatever the indentation:

- a hunk line is ``+`` or ``-`` then the line's text with every run of whitespace made one space and the ends
  stripped; file headers (``+++``, ``---``), context lines and lines of fewer than ``MIN_HUNK_CHARS``
  characters after that (``}``, ``)``, ``else:``) are left out;
- each is cut to ``MAX_HUNK_CHARS`` characters; repeats are dropped (first kept) and at most ``MAX_HUNKS``
  lines are kept, in the diff's order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_LINK_FILES = 1000
MAX_LINK_TESTS = 2000
MAX_LINK_FAILED = 500
MAX_TEST_ID_CHARS = 512
MAX_HUNKS = 400
MAX_HUNK_CHARS = 200
MIN_HUNK_CHARS = 6
_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_SPACE = re.compile(r"\s+")


def normalize_line(text: str) -> str:
    """``text`` with each run of whitespace made one space, ends stripped (the link's hunk rule)."""
    return _SPACE.sub(" ", text).strip()


def diff_hunks(diff: str) -> list[str]:
    """The ``hunks`` of a unified diff (``git show --format= SHA``): the module docstring's rule."""
    out: list[str] = []
    seen: set[str] = set()
    for raw in diff.splitlines():
        if raw.startswith(("+++", "---")) or raw[:1] not in ("+", "-"):
            continue
        text = normalize_line(raw[1:])
        if len(text) < MIN_HUNK_CHARS:
            continue
        line = (raw[0] + text)[:MAX_HUNK_CHARS]
        if line not in seen:
            seen.add(line)
            out.append(line)
            if len(out) >= MAX_HUNKS:
                break
    return out


def sha_matches(a: str | None, b: str | None) -> bool:
    """Whether two commit ids (full or abbreviated, >= 7 hex) name the same commit: one is a prefix."""
    if not a or not b:
        return False
    a, b = a.lower(), b.lower()
    return a.startswith(b) if len(a) >= len(b) else b.startswith(a)


def _bounded(values: Iterable[str], what: str) -> list[str]:
    out = []
    for value in values:
        if not value.strip():
            raise ValueError(f"{what}: an empty value")
        if any(ord(c) < 0x20 or c == "\x7f" for c in value):
            raise ValueError(f"{what}: control characters are not allowed")
        out.append(value)
    return out


class VerdictLink(BaseModel):
    """What the judge knows about the judged turn(s); the worker finds the entries (``workers.linker``)."""

    model_config = ConfigDict(extra="forbid")

    commit: str = Field(
        default="", max_length=64, description="The commit the judge ran on or judged: hex sha, >= 7 digits."
    )
    branch: str = Field(default="", max_length=512, description="Its branch (shown; not used to link).")
    session_id: str = Field(default="", max_length=512, description="The agent session that made the fix.")
    since: float | None = Field(default=None, description="Only turns at or after this time (unix seconds).")
    until: float | None = Field(default=None, description="Only turns at or before this time (unix seconds).")
    files: list[str] = Field(
        default_factory=list,
        max_length=MAX_LINK_FILES,
        description="Repo-relative files the commit changed or the judge covered.",
    )
    tests: list[str] = Field(
        default_factory=list,
        max_length=MAX_LINK_TESTS,
        description="Test ids the judge ran (`file-or-suite::name`); with them the worker applies the "
        "coverage rule per entry.",
    )
    failed: list[str] = Field(
        default_factory=list,
        max_length=MAX_LINK_FAILED,
        description="The ids of `tests` that failed (an entry they do not cover gets no verdict).",
    )
    hunks: list[str] = Field(
        default_factory=list,
        max_length=MAX_HUNKS,
        description=f"The commit's added (`+`) and removed (`-`) lines, whitespace collapsed, each at most "
        f"{MAX_HUNK_CHARS} characters (`ingest.links.diff_hunks`).",
    )

    @field_validator("commit")
    @classmethod
    def _sha(cls, value: str) -> str:
        value = value.strip().lower()
        if value and not _SHA.match(value):
            raise ValueError("a commit is 7 to 64 hex digits")
        return value

    @field_validator("files", "tests", "failed")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        return [v[:MAX_TEST_ID_CHARS] for v in _bounded(value, "a name")]

    @field_validator("hunks")
    @classmethod
    def _hunks(cls, value: list[str]) -> list[str]:
        """Each line as ``diff_hunks`` makes it (a publisher that only stripped its lines is read alike)."""
        if any(line[:1] not in ("+", "-") for line in value):
            raise ValueError("a hunk line starts with + (added) or - (removed)")
        return [(line[0] + normalize_line(line[1:]))[:MAX_HUNK_CHARS] for line in value]

    @model_validator(mode="after")
    def _something(self) -> VerdictLink:
        if not (self.commit or self.session_id or self.files or self.hunks):
            raise ValueError("a link names a commit, a session_id, files or hunks")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise ValueError("since is after until")
        if set(self.failed) - set(self.tests):
            raise ValueError("every failed test is one of tests")
        return self
