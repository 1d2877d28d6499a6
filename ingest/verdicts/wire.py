"""The verdict events git's findings become: the ``link`` form, which names a commit, not a turn (pure).

``verdict_events(findings, owner=..., project_key=...)`` is the one place a ``Finding`` becomes a wire
dict (``ingest/schema.py`` ``VerdictEvent``, its ``link`` form)::

    {"v": 1, "kind": "verdict", "ts", "owner", "project_key", "outcome", "source", "detail",
     "link": {"commit": sha, "branch": "", "session_id": "", "since": null, "until": null,
              "files": [...], "tests": [], "hunks": ["-old line", "+new line", ...]}}

``link.commit`` is the judged commit (the reverted one; the one that landed, as the branch knew it),
``files`` its repo-relative changed files, ``hunks`` its normalized changed lines (removed lines as
``-text``, then added lines as ``+text``; whitespace stripped, blank lines dropped; at most
``MAX_HUNK_LINES``), which the worker matches against an entry's changes when no turn names the commit.
``ts`` is the reverting or landing commit's committer time, so a finding is the same event every run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ingest.verdicts.rules import Finding

MAX_HUNK_LINES = 200
MAX_LINK_FILES = 100
_HOW = {
    "message": "its message says so",
    "content": "its diff undoes this one",
    "sha": "on the default branch",
    "patch-id": "same patch-id",
}


def detail_of(finding: Finding, branch: str) -> str:
    """The verdict's one-line ``detail``: who judged, how it was found."""
    by = finding.by[:12]
    if finding.source == "revert":
        return f"git: reverted by {by} ({_HOW[finding.how]})"
    if finding.how == "sha":
        return f"git: landed on {branch}"
    if finding.how == "content":
        return f"git: squash-merged into {branch} as {by} (its diff holds this one)"
    return f"git: landed on {branch} as {by} ({_HOW[finding.how]})"


def verdict_event(finding: Finding, *, owner: str, project_key: str, branch: str) -> dict[str, Any]:
    """The wire dict of one finding (module docstring)."""
    judged = finding.judged
    return {
        "v": 1,
        "kind": "verdict",
        "ts": finding.ts,
        "owner": owner,
        "project_key": project_key,
        "outcome": finding.outcome,
        "source": finding.source,
        "detail": detail_of(finding, branch),
        "link": {
            "commit": judged.sha,
            "branch": "",
            "session_id": "",
            "since": None,
            "until": None,
            "files": list(judged.files[:MAX_LINK_FILES]),
            "tests": [],
            "hunks": judged.hunks(MAX_HUNK_LINES),
        },
    }


def verdict_events(
    findings: Iterable[Finding], *, owner: str, project_key: str, branch: str
) -> list[dict[str, Any]]:
    """The wire dicts of ``findings``, in their order."""
    return [verdict_event(f, owner=owner, project_key=project_key, branch=branch) for f in findings]
