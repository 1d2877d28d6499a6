"""The labelled recall dataset: schema errors are caught; the shipped one has the asked size and spread."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evals.recall import DATASET
from evals.recall.dataset import (
    CATEGORY_KINDS,
    EVAL_NOW,
    DatasetError,
    eval_entry_id,
    load_dataset,
    parse_dataset,
    to_fix_entry,
)
from store.entry import FixEntry


def _project(owner: str = "o", key: str = "p", labels: tuple[str, ...] = ("a", "b")) -> dict[str, Any]:
    return {
        "project": {"owner": owner, "key": key},
        "entry": [
            {"label": label, "days_ago": i, "task": f"task {label}", "outcome": "fixed"}
            for i, label in enumerate(labels)
        ],
    }


def _queries(*queries: dict[str, Any]) -> dict[str, Any]:
    return {"defaults": {"owner": "o", "project": "p"}, "query": list(queries)}


POSITIVE = {"id": "q1", "category": "reworded", "text": "t", "expected": ["a"]}


def test_a_minimal_dataset_parses_with_content_hash_ids() -> None:
    dataset = parse_dataset([("p.toml", _project())], [("q.toml", _queries(POSITIVE))])
    assert [e.label for e in dataset.projects[0].entries] == ["b", "a"]  # oldest first
    assert dataset.origins[eval_entry_id("o", "p", "a")].label == "a"
    assert dataset.queries[0].kind == "positive"


@pytest.mark.parametrize(
    ("projects", "query", "message"),
    [
        ([_project()], {**POSITIVE, "expected": ["nope"]}, "unknown entry label 'nope'"),
        ([_project()], {**POSITIVE, "category": "fuzzy"}, "unknown category 'fuzzy'"),
        ([_project()], {**POSITIVE, "expected": []}, "needs expected entries"),
        ([_project()], {**POSITIVE, "category": "negative-generic"}, "must expect nothing"),
        ([_project()], {**POSITIVE, "regressed": ["b"]}, "regressed entries must be expected"),
        ([_project()], {**POSITIVE, "project": "elsewhere"}, "no project ('o', 'elsewhere')"),
        ([_project()], {**POSITIVE, "colour": "red"}, "colour"),  # the unknown field, not pydantic's wording
        ([_project(), _project(key="p2", labels=("c",))], {**POSITIVE, "expected": ["c"]}, "another project"),
        ([_project(), _project(labels=("c",))], POSITIVE, "is defined twice"),
        ([_project(), _project(key="p2", labels=("a",))], POSITIVE, "label 'a' is used twice"),
    ],
)
def test_dataset_errors_name_the_problem(
    projects: list[dict[str, Any]], query: dict[str, Any], message: str
) -> None:
    with pytest.raises(DatasetError, match=re.escape(message)):
        parse_dataset([(f"p{i}.toml", doc) for i, doc in enumerate(projects)], [("q.toml", _queries(query))])


def test_duplicate_query_ids_are_refused() -> None:
    with pytest.raises(DatasetError, match="query id 'q1' is used twice"):
        parse_dataset([("p.toml", _project())], [("q.toml", _queries(POSITIVE, POSITIVE))])


def test_a_missing_dataset_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=re.escape("no *.toml files")):
        load_dataset(tmp_path)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "projects").mkdir()
    (tmp_path / "queries").mkdir()
    (tmp_path / "projects" / "bad.toml").write_text("[project\n")
    (tmp_path / "queries" / "q.toml").write_text("")
    with pytest.raises(DatasetError, match=re.escape("bad.toml: not valid TOML")):
        load_dataset(tmp_path)


def test_entries_become_valid_fix_entries_at_fixed_times() -> None:
    dataset = parse_dataset([("p.toml", _project())], [("q.toml", _queries(POSITIVE))])
    project = dataset.projects[0]
    entries = [to_fix_entry(project.spec, e, EVAL_NOW) for e in project.entries]
    assert all(isinstance(e, FixEntry) for e in entries)
    assert [e.ts for e in entries] == [EVAL_NOW - 86_400.0, EVAL_NOW]
    assert {e.event_id for e in entries} == {"eval:a", "eval:b"}


# --- the shipped dataset ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> Any:
    return load_dataset(DATASET)


def test_shipped_dataset_has_the_asked_size_and_spread(shipped: Any) -> None:
    kinds = Counter(q.kind for q in shipped.queries)
    categories = Counter(q.category for q in shipped.queries)
    languages = {p.spec.language for p in shipped.projects}
    owners = {p.spec.owner for p in shipped.projects}
    assert len(shipped.queries) >= 80
    assert kinds["negative"] >= 20 and kinds["isolation"] >= 10 and kinds["positive"] >= 60
    assert set(categories) == set(CATEGORY_KINDS)  # every category is exercised
    assert all(n >= 2 for n in categories.values())  # so both halves of the split see each one
    assert {"python", "typescript", "go", "rust"} <= languages
    assert len(owners) >= 4
    assert any(p.spec.source.startswith("derived") for p in shipped.projects)


def test_every_shipped_entry_is_a_valid_fix_entry(shipped: Any) -> None:
    for project in shipped.projects:
        for spec in project.entries:
            entry = to_fix_entry(project.spec, spec, EVAL_NOW)
            assert entry.ts < EVAL_NOW or spec.days_ago == 0
            assert len(entry.errors) <= 10 and all(len(e) <= 200 for e in entry.errors), spec.label
            assert len(entry.solution) <= 240, spec.label
