"""One ``scan-git`` of a repository: read its history, find reverts and landed fixes, publish the new ones.

The cursor (``keys.git_scan(owner, project_key)``, a Redis hash beside the stream the verdicts go to)
holds one field per verdict published, ``source:sha`` -> ``{"ts", "id"}``, plus ``_head`` (the default
branch's head at the last scan) and ``_at``. A finding whose field is there is not published again, so a
second run publishes nothing new (idempotent) and a run stopped halfway goes on where it stopped
(resumable: each chunk's fields are written right after the chunk is in the stream; a crash between
the two publishes that chunk again, which the worker applies once). Fields of verdicts older than the
scan's window are dropped at the end of a run: a finding's ``ts`` is the reverting or landing commit's
time, inside the window, so no later run of the same window finds them again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import redis

from ingest import keys
from ingest.errors import GitError
from ingest.publish import publish_many
from ingest.verdicts import git
from ingest.verdicts.diffs import CommitDiff
from ingest.verdicts.rules import Finding, find_landed, find_reverts, reverted_shas
from ingest.verdicts.wire import verdict_events

_CHUNK = 100
_HEAD, _AT = "_head", "_at"


@dataclass(frozen=True)
class ScanConfig:
    """One scan's options: the repository, whose verdicts, the window start (unix seconds)."""

    repo: Path
    owner: str
    project_key: str
    since: float
    branch: str | None = None  # default: the repository's default branch
    stream: str = keys.DEFAULT_STREAM
    dry_run: bool = False


@dataclass
class ScanResult:
    """What one scan saw, found and published (``events``: the new verdicts, published unless dry-run)."""

    repo: str
    branch: str
    head: str
    commits: int = 0
    branch_commits: int = 0
    found: dict[str, int] = field(default_factory=dict)  # "source/how" -> findings
    known: int = 0  # findings the cursor already holds
    events: list[dict[str, Any]] = field(default_factory=list)
    published: int = 0
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``scan-git --json`` prints."""
        return {
            "repo": self.repo, "branch": self.branch, "head": self.head, "commits": self.commits,
            "branch_commits": self.branch_commits, "found": dict(sorted(self.found.items())),
            "known": self.known, "new": len(self.events), "published": self.published,
            "dry_run": self.dry_run, "events": self.events,
        }  # fmt: skip


def read_history(
    repo: Path, branch: str, since: float
) -> tuple[list[CommitDiff], list[CommitDiff], list[CommitDiff]]:
    """(the default branch's commits since ``since``, the other branches' commits not on it, older
    commits the revert messages name); raises GitError."""
    landed = git.log(repo, [branch], since=since)
    others = git.other_branches(repo, branch)
    branch_commits = git.log(repo, [*others, "--not", branch], since=since) if others else []
    known = {c.sha for c in landed}
    missing = sorted(
        {s for c in landed for s in reverted_shas(c.message) if not any(k.startswith(s) for k in known)}
    )
    named: list[CommitDiff] = []
    for sha in missing:
        try:
            named += git.log(repo, ["--no-walk", sha])
        except GitError:
            continue  # a commit of a branch this clone does not have
    return landed, branch_commits, named


def find(repo: Path, branch: str, since: float) -> tuple[list[Finding], int, int]:
    """Every finding of the window (reverts, then landed commits), the commits and branch commits read."""
    landed, branch_commits, named = read_history(repo, branch, since)
    patch_ids: dict[str, str] = {}
    if branch_commits:
        shas = [c.sha for c in (*landed, *branch_commits) if not c.is_merge]
        patch_ids = git.patch_ids(repo, shas)
    reverts = find_reverts(landed, named=named)
    reverting = {f.by for f in reverts}
    findings = reverts + find_landed(landed, branch_commits, patch_ids, reverting=reverting)
    return findings, len(landed), len(branch_commits)


def scan(client: redis.Redis | None, config: ScanConfig, *, now: float | None = None) -> ScanResult:
    """Scan ``config.repo`` and publish the verdicts the cursor does not hold (none with ``dry_run``).

    ``client`` may be None for a dry run (then every finding is new). Raises GitError, InvalidEvent (a
    verdict the schema refuses: nothing of its chunk is published) and PublishError."""
    repo = git.top_level(config.repo)
    branch = config.branch or git.default_branch(repo)
    head = git.resolve(repo, branch)
    findings, commits, branch_commits = find(repo, branch, config.since)
    cursor = keys.git_scan(config.owner, config.project_key)
    done = set(client.hkeys(cursor)) if client is not None else set()
    done = {k.decode() if isinstance(k, bytes) else k for k in done}
    new = [f for f in findings if f.key not in done]
    result = ScanResult(str(repo), branch, head, commits, branch_commits, dry_run=config.dry_run)
    for finding in findings:
        name = f"{finding.source}/{finding.how}"
        result.found[name] = result.found.get(name, 0) + 1
    result.known = len(findings) - len(new)
    result.events = verdict_events(new, owner=config.owner, project_key=config.project_key, branch=branch)
    if config.dry_run or client is None:
        return result
    for start in range(0, len(new), _CHUNK):
        chunk = new[start : start + _CHUNK]
        ids = publish_many(client, result.events[start : start + _CHUNK], stream=config.stream)
        fields = {f.key: orjson.dumps({"ts": f.ts, "id": i}) for f, i in zip(chunk, ids, strict=True)}
        client.hset(cursor, mapping=fields)  # type: ignore[arg-type]
        result.published += len(chunk)
    _finish(client, cursor, head=head, since=config.since, now=time.time() if now is None else now)
    return result


def _finish(client: redis.Redis, cursor: str, *, head: str, since: float, now: float) -> None:
    """Remember the head and the time; drop fields of verdicts older than the window."""
    stale: list[Any] = []
    for name, value in client.hscan_iter(cursor):
        if name in (_HEAD.encode(), _AT.encode()):
            continue
        try:
            ts = float(orjson.loads(value)["ts"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        if ts < since:
            stale.append(name)
    pipe = client.pipeline()
    if stale:
        pipe.hdel(cursor, *stale)
    pipe.hset(cursor, mapping={_HEAD: head, _AT: str(now)})
    pipe.execute()
