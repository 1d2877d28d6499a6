"""The workspace-mode evaluation on a small history made with real git: the derived data, its fidelity to
the full index, and an end-to-end run from the derived data alone."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from pathlib import Path

import pytest

from evals.related.build import derive as derive_history
from evals.related.checkout import GitTrees, data_path, read, restrict
from evals.related.core import Repo, load_repos
from evals.related.run import queries_for
from evals.related.workspace import (
    BEGIN,
    DOCS,
    END,
    RESULT,
    SYSTEMS,
    UNTOUCHED,
    build,
    evaluate,
    render,
    table,
)
from evals.related.workspace_probes import BEGIN as PROBES_BEGIN
from evals.related.workspace_probes import END as PROBES_END
from evals.related.workspace_probes import RESULT as PROBES_RESULT
from evals.related.workspace_probes import derive_probes, measure
from evals.related.workspace_probes import render as render_probes
from store.localize import CheckoutIndex, localize
from store.localize.resolve import LocalizeWeights
from tests.evals.test_related import commit, git

FUNCTIONS = {
    "pkg/parser.py": ("parse_quoted_field", "split_row_cells"),
    "pkg/writer.py": ("write_header_row", "escape_cell_text"),
    "pkg/dialects.py": ("load_dialect_table", "guess_delimiter_char"),
}
FILLER = "The reader then keeps going with the rest of the input, which users notice much later on."


def source(path: str, version: dict[str, int]) -> str:
    body = ["import os\n"]
    for name in FUNCTIONS[path]:
        body.append(f"\n\ndef {name}(value):\n    step = {version.get(name, 0)}\n    return value\n")
    if path == "pkg/dialects.py":
        body.append('\n\ndef fail():\n    raise KeyError("unknown dialect name given to the reader")\n')
    return "".join(body)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 64-commit history (each commit changes one function; most messages name it) derived into a data
    directory: the repository's JSON lines and its workspace data."""
    repo = tmp_path_factory.mktemp("ws-history")
    git(repo, "init", "-q", "-b", "main")
    version: dict[str, int] = {}
    commit(repo, {p: source(p, version) for p in FUNCTIONS}, "Add the csv package", 1_700_000_000)
    names = [(path, name) for path, pair in FUNCTIONS.items() for name in pair]
    for i in range(1, 64):
        path, name = names[i % len(names)]
        version[name] = i
        if i % 3 == 0:
            title = f"Handle a subtle case in the {path.split('/')[1][:-3]} module"
        elif i % 3 == 1:
            title = f"Fix `{name}()` on rows that end early"
        else:
            title = f"Raise a clear error: unknown dialect name given to the reader, via {name}"
        commit(repo, {path: source(path, version)}, f"{title}\n\n{FILLER}", 1_700_000_000 + 100 * i)
    out = tmp_path_factory.mktemp("ws-data")
    lines = derive_history(str(repo / ".git"), "example/csv", "python", "HEAD", 100)
    raw = "".join(json.dumps(line) + "\n" for line in lines).encode()
    (out / "example__csv.jsonl.gz").write_bytes(gzip.compress(raw))
    build(repo / ".git", None, data_dir=out)
    (out / "git").symlink_to(repo / ".git")
    return out


@pytest.fixture(scope="module")
def repo(data_dir: Path) -> Repo:
    return load_repos(data_dir)[0]


def test_the_derived_data_resolves_as_the_full_index_does(data_dir: Path, repo: Repo) -> None:
    derived = read(data_path(data_dir, repo.name))["tasks"]
    assert derived
    trees = GitTrees(data_dir / "git")
    try:
        for commit_ in repo.commits:
            if commit_.sha not in derived:
                continue
            task = derived[commit_.sha]
            assert task["parent"] == trees.first_parent(commit_.sha)
            full = trees.index(task["parent"])
            restricted = CheckoutIndex.from_json(task["index"])
            assert set(restricted.files) <= set(full.files)
            prior = LocalizeWeights(min_weight=0.05, untouched=0.25)
            touched = set(full.files[::2])  # the history prior: resolved from the derived data alike
            for weights in (LocalizeWeights(), LocalizeWeights(min_weight=0.05, max_files=10), prior):
                expected = localize(commit_.text, full, weights=weights)
                assert localize(commit_.text, restricted, weights=weights) == expected
                expected = localize(commit_.text, full, weights=weights, touched=touched)
                assert localize(commit_.text, restricted, weights=weights, touched=touched) == expected
            assert restrict(full, commit_.text) == restricted
    finally:
        trees.close()


def test_the_localizer_finds_the_named_function_in_the_parent_checkout(data_dir: Path, repo: Repo) -> None:
    derived = read(data_path(data_dir, repo.name))["tasks"]
    named = [c for c in repo.commits if c.sha in derived and c.title.startswith("Fix `")]
    assert named
    for commit_ in named:
        found = localize(commit_.text, CheckoutIndex.from_json(derived[commit_.sha]["index"]))
        assert found[0].path in commit_.files
        assert "defined here" in found[0].why


def test_the_eval_runs_from_the_derived_data_alone(data_dir: Path, repo: Repo) -> None:
    result = evaluate([repo], data_dir)
    assert result["repos"] == ["example/csv"]
    for split in ("tune", "held_out"):
        report = result["report"][split]
        assert set(report["systems"]) == set(SYSTEMS)
        assert report["localizer"]["tasks"] == result["tasks"][split] > 0
        assert report["localizer"]["top_file_changed"] >= 1
        assert report["localizer_with_prior"]["tasks"] == result["tasks"][split]
        bound = report["systems"]["one_file_bound"]  # one right file past fixes touched: mid-task's hits
        assert bound["hit_fn"] >= report["systems"]["workspace"]["hit_fn"]
        mid = report["systems"]["mid_task"]
        assert mid["hit_fn"] >= report["systems"]["text_only"]["hit_fn"]
        assert (
            report["latency"]["restricted_index_ms"]["p99"]
            >= report["latency"]["restricted_index_ms"]["median"]
        )
    assert "| held-out | workspace mode" in table(result)
    assert result["prior_point"]["untouched"] in UNTOUCHED
    assert "History prior" in render(result)


def test_the_committed_result_is_what_the_docs_and_the_defaults_say() -> None:
    result = json.loads(RESULT.read_text())
    text = DOCS.read_text(encoding="utf-8")
    assert text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip() == render(result).strip()
    assert result["shipped_defaults_are_the_choice"]
    assert result["choice"]["min_weight"] == LocalizeWeights().min_weight


def test_the_probes_restricted_index_resolves_as_the_full_one(data_dir: Path, repo: Repo) -> None:
    other = dataclasses.replace(repo, name="example/other")  # its tasks stand for another repository's
    derived = derive_probes(repo, [other], data_dir / "git", log=io.StringIO())["probes"]
    trees = GitTrees(data_dir / "git")
    try:
        hosts = [c for c in repo.commits if c.sha in derived]
        assert hosts and len(hosts) < len([c for c in repo.commits if c.is_task])  # every other task
        for commit_ in hosts:
            position = repo.commits.index(commit_)
            [probe] = [q for q in queries_for(repo, commit_, [other], position) if q.cls == "off_topic"]
            assert derived[commit_.sha]["source"] == probe.source and probe.source.startswith(
                "example/other@"
            )
            full = trees.index(trees.first_parent(commit_.sha))
            restricted = CheckoutIndex.from_json(derived[commit_.sha]["index"])
            assert localize(probe.text, restricted) == localize(probe.text, full)
    finally:
        trees.close()


def test_the_committed_probe_result_is_what_the_docs_say_and_reproduces() -> None:
    result = json.loads(PROBES_RESULT.read_text())
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(PROBES_BEGIN) + len(PROBES_BEGIN) : text.index(PROBES_END)]
    assert section.strip() == render_probes(result).strip()
    assert measure(load_repos(), "held_out") == result["held_out"]  # the committed data, the shipped weights
