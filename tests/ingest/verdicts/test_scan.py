"""``scan`` on a real git repository and a real Redis: what it finds, the cursor, the publishing path."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import redis

from ingest import keys
from ingest.errors import GitError, InvalidEvent
from ingest.schema import VerdictEvent
from ingest.verdicts.scan import ScanConfig, scan
from tests.ingest.verdicts.history import History, build

PROJECT = "github.com/acme/pay"
LINK_ACCEPTED = "link" in VerdictEvent.model_fields
NOT_YET = "the schema refuses the verdict `link` form until the link branch is merged (the lead flips this)"


@pytest.fixture
def history(tmp_path: Path) -> History:
    return build(tmp_path / "pay")


def _config(history: History, **changes: object) -> ScanConfig:
    values: dict[str, object] = {"repo": history.path, "owner": "alice", "project_key": PROJECT, "since": 0.0}
    return ScanConfig(**{**values, **changes})  # type: ignore[arg-type]


def _verdicts(history: History, events: list[dict[str, object]]) -> set[tuple[str, str, str]]:
    role = {sha: name for name, sha in history.shas.items()}
    return {(str(e["source"]), role[e["link"]["commit"]], str(e["detail"])) for e in events}  # type: ignore[index]


def test_a_dry_run_finds_reverts_by_message_and_content_and_every_way_of_landing(history: History) -> None:
    result = scan(None, _config(history, dry_run=True))
    assert (result.branch, result.head, result.commits, result.branch_commits) == (
        "main", history.shas["picked"], 7, 3
    )  # fmt: skip
    found = {(source, judged) for source, judged, _ in _verdicts(history, result.events)}
    assert {j for s, j in found if s == "revert"} == {"fix_login", "add_refund"}
    landed = {"base", "fix_login", "add_refund", "squash", "picked"}  # the reverts' own landing: no fix
    assert {j for s, j in found if s == "merged"} == landed | {"draft", "final", "hotfix"}
    assert {k: v for k, v in result.found.items() if k not in ("merged/content", "merged/branch")} == {
        "merged/patch-id": 1, "merged/sha": 5, "revert/content": 1, "revert/message": 1
    }  # fmt: skip
    assert result.found.get("merged/content", 0) + result.found.get("merged/branch", 0) == 2
    squash = history.shas["squash"][:12]
    assert ("merged", "final", f"git: squash-merged into main as {squash} (its diff holds this one)") in (
        _verdicts(history, result.events)
    )
    assert result.published == 0 and result.known == 0
    revert = next(
        e
        for e in result.events
        if e["source"] == "revert" and e["link"]["commit"] == history.shas["fix_login"]
    )  # type: ignore[index]
    assert revert["outcome"] == "partial" and revert["link"]["files"] == ["pay.py"]  # type: ignore[index]
    assert (
        "+response = client.create_charge(card=card, amount=amount, timeout=settings.charge_timeout)"
        in revert["link"]["hunks"]
    )  # type: ignore[index]


def test_the_window_leaves_older_commits_out(history: History) -> None:
    result = scan(None, _config(history, since=history.clock + 3600, dry_run=True))
    assert result.commits == 0 and result.events == []


def test_findings_the_cursor_holds_are_not_published_again(
    history: History, redis_client: redis.Redis
) -> None:
    cursor = keys.git_scan("alice", PROJECT)
    held = {f"revert:{history.shas['fix_login']}", f"merged:{history.shas['base']}"}
    redis_client.hset(
        cursor, mapping={name: orjson.dumps({"ts": history.clock, "id": "1-0"}) for name in held}
    )
    result = scan(redis_client, _config(history, dry_run=True))
    assert result.known == 2
    assert not {f"{e['source']}:{e['link']['commit']}" for e in result.events} & held  # type: ignore[index]
    assert len(result.events) == 10 - 2
    other = scan(redis_client, _config(history, owner="bob", dry_run=True))  # another owner's cursor
    assert other.known == 0 and len(other.events) == 10


def test_a_refused_verdict_publishes_nothing_and_moves_no_cursor(
    history: History, redis_client: redis.Redis
) -> None:
    with pytest.raises(InvalidEvent):
        scan(redis_client, _config(history, owner="x" * 10_000))
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 0
    assert redis_client.exists(keys.git_scan("x" * 10_000, PROJECT)) == 0


def test_no_repository_is_a_git_error(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not a git repository"):
        scan(None, ScanConfig(repo=tmp_path, owner="alice", project_key=PROJECT, since=0.0, dry_run=True))


@pytest.mark.xfail(not LINK_ACCEPTED, reason=NOT_YET, strict=True)
def test_scan_publishes_once_and_a_second_run_publishes_nothing(
    history: History, redis_client: redis.Redis
) -> None:
    first = scan(redis_client, _config(history))
    assert first.published == 10 and redis_client.xlen(keys.DEFAULT_STREAM) == 10
    again = scan(redis_client, _config(history))
    assert (again.published, again.known, again.events) == (0, 10, [])
    assert redis_client.xlen(keys.DEFAULT_STREAM) == 10
    history.git("revert", "--no-edit", history.shas["picked"])  # one more revert (its landing is no fix)
    third = scan(redis_client, _config(history))
    assert third.published == 1 and {e["source"] for e in third.events} == {"revert"}
    cursor = redis_client.hgetall(keys.git_scan("alice", PROJECT))
    assert cursor[b"_head"].decode() == history.git("rev-parse", "HEAD") and len(cursor) == 12 + 1
