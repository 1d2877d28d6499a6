"""Recall on real files: the right fix first, nothing when nothing is relevant, history respected."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from evals.recall.fixtures import FILE_ALONE, NOTHING_RELEVANT, NOW, PROJECT_LOG, RIGHT_FIX_FIRST
from store import FixEntry, FixStore, prompt_block
from store.paths import project_files
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry


@pytest.fixture
def store(data_dir: Path) -> FixStore:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, PROJECT_LOG)
    store.append(OWNER, "/another/project", [make_entry(99, "login times out", project="/another/project")])
    return store


@pytest.mark.parametrize(("query", "kwargs", "expected"), RIGHT_FIX_FIRST)
def test_the_right_fix_comes_first(store: FixStore, query: str, kwargs: dict, expected: int) -> None:  # type: ignore[type-arg]
    hits = store.recall(OWNER, PROJECT, query, now=NOW, **kwargs)
    assert hits, f"nothing recalled for {query!r}"
    assert hits[0].entry.id == make_entry(expected).id == PROJECT_LOG[expected - 1].id


@pytest.mark.parametrize("query", NOTHING_RELEVANT)
def test_abstains_when_nothing_is_relevant(store: FixStore, query: str) -> None:
    assert store.recall(OWNER, PROJECT, query, now=NOW) == []
    assert prompt_block(store.recall(OWNER, PROJECT, query, now=NOW), now=NOW) == ""


def test_a_file_alone_does_not_make_an_unrelated_task_relevant(store: FixStore) -> None:
    query, files = FILE_ALONE
    assert store.recall(OWNER, PROJECT, query, files=files, now=NOW) == []


def test_unknown_projects_and_owners_recall_nothing(store: FixStore) -> None:
    assert store.recall(OWNER, "/never/seen", "login times out", now=NOW) == []
    assert store.recall("mallory", PROJECT, "login times out", now=NOW) == []


def test_other_projects_never_leak(store: FixStore) -> None:
    other = make_entry(99, "login times out", project="/another/project")
    theirs = store.recall(OWNER, "/another/project", "login times out", now=NOW)
    assert [h.entry.id for h in theirs] == [other.id]  # there, the same words find it
    hits = store.recall(OWNER, PROJECT, "login times out", now=NOW)
    assert hits and {h.entry.project for h in hits} == {PROJECT}
    assert other.id not in {h.entry.id for h in hits}


def test_k_limits_the_results(store: FixStore) -> None:
    assert len(store.recall(OWNER, PROJECT, "login serializer invoice pool", k=2, now=NOW)) <= 2
    assert store.recall(OWNER, PROJECT, "login times out", k=0, now=NOW) == []


def test_only_the_newest_of_a_lineage_is_recalled(data_dir: Path) -> None:
    store = fix_store(data_dir)
    old = make_entry(1, "fix login timeout", files=["src/auth.py"], solution="raised the timeout")
    new = make_entry(2, "fix the login timeout bug", files=["src/auth.py"], solution="added a retry")
    store.append(OWNER, PROJECT, [old])
    assert store.append(OWNER, PROJECT, [new]).added[0].supersedes == old.id
    hits = store.recall(OWNER, PROJECT, "login timeout", now=NOW)
    assert [h.entry.id for h in hits] == [new.id]
    assert len(store.read(OWNER, PROJECT).entries) == 2  # supersession never deletes
    assert store.stats(OWNER, PROJECT).superseded == 1


def test_a_regressed_fix_is_flagged_and_ranked_below_a_fix_that_held(data_dir: Path) -> None:
    store = fix_store(data_dir)
    held = make_entry(1, "cache returns stale sessions", files=["src/cache.py"], ts=1000)
    broken = make_entry(
        2, "cache returns stale sessions", files=["src/session_cache.py"], errors=["KeyError: 'sid'"], ts=2000
    )
    later = make_entry(
        3, "add metrics to the exporter", files=["src/exporter.py"], errors=["KeyError: 'sid'"],
        outcome="partial", ts=3000,
    )  # fmt: skip
    store.append(OWNER, PROJECT, [held, broken, later])
    hits = store.recall(OWNER, PROJECT, "cache returns stale sessions", now=NOW)
    assert [h.entry.id for h in hits][:2] == [held.id, broken.id]  # the newer fix regressed: it sorts below
    assert hits[1].regressed and hits[1].regressed_by == later.id
    assert not hits[0].regressed
    assert "[fixed, regressed later]" in prompt_block(hits, now=NOW)
    assert store.stats(OWNER, PROJECT).regressed == 1
    assert store.read(OWNER, PROJECT).entries[1] == broken  # derived at read time: nothing rewritten


def test_recency_breaks_ties(data_dir: Path) -> None:
    store = fix_store(data_dir)
    older = make_entry(1, "parser drops the last row", files=["a/parser.py"], ts=1000)
    newer = make_entry(2, "parser drops the last row", files=["b/parser.py"], ts=2000)
    store.append(OWNER, PROJECT, [older, newer])
    hits = store.recall(OWNER, PROJECT, "parser drops the last row", now=NOW)
    assert [h.entry.id for h in hits] == [newer.id, older.id]
    assert hits[0].score == hits[1].score


def test_recall_output_is_redacted_again(data_dir: Path) -> None:
    """An old line written before redaction existed still never reaches the prompt with its secret."""
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    files.directory.mkdir(parents=True)
    leaked = make_entry(1, "deploy script fails", solution="ran with password=hunter2hunter2 in env")
    files.log.write_bytes(orjson.dumps(leaked.model_dump(mode="json")) + b"\n")
    store = fix_store(data_dir)
    hits = store.recall(OWNER, PROJECT, "deploy script fails", now=NOW)
    assert "hunter2" not in hits[0].entry.solution and "[REDACTED]" in hits[0].entry.solution
    assert "hunter2" not in prompt_block(hits, now=NOW)
    assert "hunter2" in store.read(OWNER, PROJECT).entries[0].solution  # read is the raw log


def test_stale_entries_are_marked_not_dropped(data_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "kept.py").write_text("")
    store = fix_store(data_dir)
    gone: FixEntry = make_entry(1, "parser crash on empty file", files=["src/removed.py"], commit="aaaaaaa")
    kept: FixEntry = make_entry(2, "parser crash on unicode", files=["src/kept.py"], commit="bbbbbbb")
    store.append(OWNER, PROJECT, [gone, kept])
    hits = store.recall(
        OWNER, PROJECT, "parser crash", workspace=str(workspace), known_commits={"bbbbbbb"}, now=NOW
    )
    marks = {h.entry.id: h.stale for h in hits}
    assert marks[gone.id] == ("stale: commit gone", "stale: file gone: src/removed.py")
    assert marks[kept.id] == ()
    block = prompt_block(hits, known_commits={"bbbbbbb"}, workspace=str(workspace), now=NOW)
    assert block.count("stale: commit gone") == 1  # marks are not repeated
    assert store.recall(OWNER, PROJECT, "parser crash", now=NOW)[0].stale == ()  # nothing checked


def test_recalled_results_are_json_serializable(store: FixStore) -> None:
    hits = store.recall(OWNER, PROJECT, "login times out", now=NOW)
    data = orjson.loads(orjson.dumps([h.to_dict() for h in hits]))
    assert data[0]["entry"]["id"] == make_entry(1).id and isinstance(data[0]["score"], float)
