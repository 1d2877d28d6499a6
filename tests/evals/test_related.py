"""The related-fix evaluation's instrument: derivation, gold labels, BM25, splits, an end-to-end replay.

These check the measuring instrument, not today's recall figures (those are reported, not floored).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import subprocess
from pathlib import Path

import pytest

from evals.related.__main__ import QUERIES, RESULTS, misses
from evals.related.build import Hunk, changed_functions, clean_message, derive, regex_definitions
from evals.related.core import (
    Commit,
    bm25_rank,
    bm25_tokens,
    jaccard_rank,
    load_repos,
    parse_repo,
    related,
    shares_rare_word,
    split_of,
    words,
)
from evals.related.run import ROTATION_CAP, replay, summarize
from fixmem.settings import Settings

LONG = "The parser drops the quoted field when a comma sits inside quotes and the row is then too short. "


def git(repo: Path, *args: str, when: int = 0) -> str:
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t"}
    dates = {"GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    env = {**who, **dates, "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def commit(repo: Path, files: dict[str, str], message: str, when: int) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(
        repo,
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "commit.gpgsign=false",
        "commit",
        "-q",
        "-m",
        message,
        when=when,
    )


def module(alpha: str = "return 1", beta: str = "return 2", meth: str = "return 3") -> str:
    return (
        "import os\n\n\n"
        f"def alpha(x):\n    y = x\n    {alpha}\n\n\n"
        f"def beta(x):\n    y = x\n    {beta}\n\n\n"
        f"class Reader:\n    def meth(self):\n        z = 0\n        {meth}\n"
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """A five-commit history made with real git; returns what ``derive`` makes of it (header first)."""
    repo = tmp_path_factory.mktemp("history")
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"pkg/csv.py": module()}, "Add the csv reader", 1_700_000_000)
    commit(repo, {"pkg/csv.py": module(alpha="return 10")}, "Fix alpha (#12)\n\n" + LONG, 1_700_000_100)
    commit(repo, {"pkg/csv.py": module(alpha="return 10", meth="return 30")}, "Tune meth", 1_700_000_200)
    commit(
        repo,
        {
            "pkg/csv.py": module(alpha="return 10", beta="return 20", meth="return 30"),
            "pkg/other.py": "X = 1\n",
        },
        "Fix beta, add other",
        1_700_000_300,
    )
    commit(
        repo,
        {"pkg/csv.py": module(alpha="return 11", beta="return 20", meth="return 30")},
        "Fix alpha again (#13)\n\n"
        + LONG
        + "\n\n* wip\n\n* more wip\n\n---------\n\nCo-authored-by: x <x@y.z>\n"
        "Change-Id: I123\nSigned-off-by: t <t@example.com>",
        1_700_000_400,
    )
    return list(derive(str(repo / ".git"), "example/csv", "python", "HEAD", 10))


def test_derive_finds_the_changed_functions_and_cleans_the_message(history: list[dict[str, object]]) -> None:
    header, *rows = history
    assert header["kept"] == 5 and header["repo"] == "example/csv"
    assert [r["title"] for r in rows] == [
        "Add the csv reader",
        "Fix alpha",
        "Tune meth",
        "Fix beta, add other",
        "Fix alpha again",
    ]
    assert [r["functions"] for r in rows] == [
        ["pkg/csv.py::alpha", "pkg/csv.py::beta", "pkg/csv.py::Reader", "pkg/csv.py::Reader.meth"],
        ["pkg/csv.py::alpha"],
        ["pkg/csv.py::Reader.meth"],
        ["pkg/csv.py::beta"],
        ["pkg/csv.py::alpha"],
    ]
    assert rows[3]["files"] == ["pkg/csv.py", "pkg/other.py"]
    assert rows[4]["body"] == LONG.strip()  # trailers, the squash list and the separator are gone
    assert [int(str(r["ts"])) for r in rows] == sorted(int(str(r["ts"])) for r in rows)


def test_gold_labels_on_the_hand_made_history(history: list[dict[str, object]]) -> None:
    repo = parse_repo(json.dumps(r) for r in history)
    first, fix_alpha, tune_meth, fix_beta, again = repo.commits
    same_fn, same_file = related(again, repo.commits[:4])
    assert same_fn == {first.sha, fix_alpha.sha}  # the first commit wrote alpha; fix_alpha changed it
    assert same_file == {first.sha, fix_alpha.sha, tune_meth.sha, fix_beta.sha}
    same_fn, same_file = related(fix_beta, repo.commits[:3])
    assert same_fn == {first.sha}
    assert related(first, ()) == (frozenset(), frozenset())


def test_bookkeeping_files_relate_nothing() -> None:
    a = Commit("a" * 40, 1, "t", "", ("CHANGELOG.md", "Cargo.lock"), (), ())
    b = Commit("b" * 40, 2, "t", "", ("CHANGELOG.md", "src/x.rs"), (), ())
    assert related(b, [a]) == (frozenset(), frozenset())


def test_end_to_end_replay_of_the_hand_made_history(history: list[dict[str, object]], tmp_path: Path) -> None:
    repo = parse_repo(json.dumps(r) for r in history)
    records = replay(repo, [], tmp_path, warmup=1)
    shas = [c.sha[:10] for c in repo.commits]
    # Only commits with 15 words or more are tasks: "Fix alpha" (position 1) and "Fix alpha again" (4).
    assert sorted({r["sha"] for r in records}) == sorted([shas[1], shas[4]])
    last = [r for r in records if r["sha"] == shas[4]]
    assert {r["class"] for r in last} == {"start", "one_line", "mid_files"}
    for record in last:
        assert record["same_function"] == sorted([shas[0], shas[1]])
        for system in ("fixmem", "bm25", "jaccard", "fixmem_no_floor"):
            assert {sha for sha, _ in record["results"][system]} <= set(shas[:4])  # only earlier fixes
    # BM25 over four entries: the earlier alpha fix carries the same long text, so it ranks first.
    start = next(r for r in last if r["class"] == "start")
    assert start["results"]["bm25"][0][0] == shas[1]
    summary = summarize(records)
    cell = summary["all"]["start"]["bm25"]
    assert (cell["queries"], cell["with_fn"], cell["hit_fn"]) == (2, 2, 2)
    assert summary["all"]["start"]["fixmem"]["queries"] == 2


def textbook_bm25(corpus: list[list[str]], query: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Okapi BM25 written out, with Lucene's IDF ln(1 + (N - df + .5) / (df + .5))."""
    n, avgdl = len(corpus), sum(len(d) for d in corpus) / len(corpus)
    scores = []
    for doc in corpus:
        score = 0.0
        for term in set(query):
            df = sum(1 for d in corpus if term in d)
            if df:
                tf = doc.count(term)
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


def test_bm25_equals_the_textbook_formula_on_a_toy_corpus() -> None:
    corpus = [
        "parser drops quoted field inside csv rows",
        "retry the upload when the server answers 503",
        "csv writer quotes every field twice",
        "cache key ignores the python version",
        "parser crash on empty csv file csv csv",
        "lockfile resolution picks the wrong wheel",
    ]
    query = "csv parser quoted field"
    tokens = bm25_tokens([*corpus, query])
    expected = textbook_bm25(tokens[:-1], tokens[-1])
    want = sorted((i for i, s in enumerate(expected) if s > 0), key=lambda i: -expected[i])[:5]
    got = bm25_rank(corpus, query)
    assert [i for i, _ in got] == want
    # Lucene's BM25, which bm25s follows, leaves out the constant (k1 + 1) factor: same ranking.
    assert [round(s, 4) for _, s in got] == [round(expected[i] / 2.5, 4) for i in want]
    assert want[0] == 0 and 1 not in want  # by hand: doc 0 holds all four terms; doc 1 none
    assert bm25_rank(corpus, "kubernetes") == []


def test_jaccard_floor_and_rare_words() -> None:
    corpus = [words("parser drops quoted field"), words("upload retry on 503")]
    assert jaccard_rank(corpus, "parser drops quoted field") == [(0, 1.0)]
    assert jaccard_rank(corpus, "something else entirely") == []
    assert shares_rare_word("fix the frobnicate step", ["frobnicate in x"], ["other thing"])
    assert not shares_rare_word("fix the frobnicate step", ["frobnicate in x"], ["frobnicate too"])


def test_splits_are_a_fixed_hash_of_the_sha() -> None:
    shas = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(400)]
    splits = [split_of(s) for s in shas]
    assert splits == [split_of(s) for s in shas]
    assert 150 < splits.count("tune") < 250
    expected = "tune" if int(hashlib.sha256(shas[0].encode()).hexdigest()[:8], 16) % 2 == 0 else "held_out"
    assert splits[0] == expected


def test_regex_definition_finders() -> None:
    go = (
        "package x\n\nfunc (s *Server) Serve(x int) error {\n\treturn nil\n}\n\n"
        "func helper() {\n\tx := 1\n}\n"
    )
    assert [(d.name, d.start, d.end) for d in regex_definitions(go, "go")] == [
        ("Server.Serve", 3, 5),
        ("helper", 7, 9),
    ]
    rust = "impl Foo {\n    pub fn bar(&self) -> u8 {\n        1\n    }\n}\n\nfn baz() {}\n"
    names = {d.name: (d.start, d.end) for d in regex_definitions(rust, "rust")}
    assert names["bar"] == (2, 4)
    ts = "export class Cache {\n  get(key: string): number {\n    return 1;\n  }\n}\n"
    names = {d.name: (d.start, d.end) for d in regex_definitions(ts, "ts")}
    assert names == {"Cache": (1, 5), "get": (2, 4)}
    hunk = Hunk(
        header="@@ -2,3 +2,3 @@",
        lines=[" impl Foo {", "     pub fn bar(&self) -> u8 {", "-        0", "+        1"],
        new_start=1,
    )
    assert changed_functions("src/foo.rs", rust, [hunk], "rust") == ["src/foo.rs::bar"]


def test_clean_message_keeps_the_description() -> None:
    title, body = clean_message(
        "Fix it (#7)\n\n## Summary\n\nText here.\n\nReviewed-on: https://x\nChange-Id: I1\n"
    )
    assert (title, body) == ("Fix it", "## Summary\n\nText here.")


def test_the_shipped_data_loads_and_is_time_ordered() -> None:
    repos = load_repos()
    assert len(repos) >= 4 and len({r.lang for r in repos}) >= 3
    for repo in repos:
        assert [c.ts for c in repo.commits] == sorted(c.ts for c in repo.commits)
        assert sum(1 for c in repo.commits if c.is_task) > 100


def test_a_quick_subset_runs_end_to_end(tmp_path: Path) -> None:
    repos = load_repos()
    records = replay(repos[0], repos[1:], tmp_path, limit=70)
    assert records
    positions = {c.sha[:10]: i for i, c in enumerate(repos[0].commits)}
    for record in records:
        for system in ("fixmem", "bm25", "jaccard", "fixmem_no_floor"):
            returned = [sha for sha, _ in record["results"][system]]
            assert len(returned) <= 5
            assert all(positions[sha] < positions[record["sha"]] for sha in returned)  # only the past
        if record["class"] == "off_topic":
            assert record["same_file"] == [] and record["source"].split("@")[0] != repos[0].name
    with gzip.open(Path(__file__).parents[2] / "evals/related/results/queries.jsonl.gz", "rt") as fh:
        shipped = [json.loads(line) for line in fh]
    first = [q for q in shipped if q["repo"] == repos[0].name and positions[q["sha"]] < 70]
    # The committed full run asked the same queries of the same history, with the same gold labels.
    assert [(q["sha"], q["class"], q["same_function"]) for q in first] == [
        (r["sha"], r["class"], r["same_function"]) for r in records
    ]


def test_the_misses_report_agrees_with_the_summary() -> None:
    with gzip.open(QUERIES, "rt") as fh:
        queries = [json.loads(line) for line in fh]
    cell = json.loads(RESULTS.read_text())["summary"]["tune"]["start"]["fixmem"]
    head = misses(queries, 2).splitlines()[0]
    assert f"{cell['with_fn']} task-start queries" in head
    assert f"fixmem missed {cell['with_fn'] - cell['hit_fn']}," in head


def test_the_replay_store_keeps_as_many_entries_as_the_pipeline() -> None:
    assert Settings().rotation_cap == ROTATION_CAP
