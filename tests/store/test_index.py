"""Index keywords and the IDF-weighted overlap arithmetic (pure)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.recall.index import LexicalIndex, Postings, build_index, idf, keywords, usable_index
from tests.store.factories import make_entry


def test_keywords_cover_task_solution_errors_and_symbols() -> None:
    entry = make_entry(1, "fix login timeout", solution="raised the limit", errors=["TimeoutError: slow"])
    entry = entry.model_copy(update={"symbols": ["SessionPool.acquire"]})
    assert keywords(entry) == [
        "login", "timeout", "raised", "limit", "timeouterror", "error", "slow", "sessionpool", "session",
        "pool", "acquire",
    ]  # fmt: skip


def test_build_index_maps_ids_to_keywords() -> None:
    entries = [make_entry(1, "login timeout"), make_entry(2, "pool exhausted")]
    assert build_index(entries) == {entries[0].id: ["login", "timeout"], entries[1].id: ["pool", "exhausted"]}


@pytest.mark.parametrize(
    ("index", "usable"),
    [
        ({"a": ["x"], "b": []}, True),
        ({"a": ["x"]}, False),  # missing id
        ({"a": ["x"], "b": [], "c": []}, False),  # extra id
        ({"a": "x", "b": []}, False),  # wrong shape
        ({"a": [1], "b": []}, False),
        (["a", "b"], False),
        (None, False),
    ],
)
def test_usable_index(index: object, usable: bool) -> None:
    assert (usable_index(index, ["a", "b"]) is not None) is usable


def test_overlap_is_weighted_by_rarity() -> None:
    lexical = LexicalIndex([["login", "timeout"], ["login", "pool"], ["login", "cache"]])
    rare = lexical.overlap(["timeout"])
    common = lexical.overlap(["login"])
    assert rare.coverage.tolist() == [1.0, 0.0, 0.0]
    assert common.coverage.tolist() == [1.0, 1.0, 1.0]
    # "login" is in every entry (BM25 idf ln(1 + 0.5/3.5)), "timeout" in one (ln(1 + 2.5/1.5)): a shared
    # rare word weighs more, and a word every entry holds almost nothing.
    assert rare.jaccard[0] > common.jaccard[0]
    idf_login, idf_timeout = math.log1p(0.5 / 3.5), math.log1p(2.5 / 1.5)
    assert (lexical.idf["login"], lexical.idf["timeout"]) == (
        pytest.approx(idf_login),
        pytest.approx(idf_timeout),
    )
    assert common.jaccard[0] == pytest.approx(idf_login / (idf_login + idf_timeout))


@pytest.mark.parametrize(
    ("query", "jaccard", "coverage"),
    [
        ([], [0.0, 0.0], [0.0, 0.0]),
        (["nowhere"], [0.0, 0.0], [0.0, 0.0]),
        (["a", "b"], [1.0, 0.0], [1.0, 0.0]),
        (["a", "a", "b"], [1.0, 0.0], [1.0, 0.0]),  # repeats count once
    ],
)
def test_overlap_table(query: list[str], jaccard: list[float], coverage: list[float]) -> None:
    lexical = LexicalIndex([["a", "b"], ["c"]])
    overlap = lexical.overlap(query)
    assert np.allclose(overlap.jaccard, jaccard) and np.allclose(overlap.coverage, coverage)


def test_unknown_query_words_lower_coverage() -> None:
    lexical = LexicalIndex([["a", "b"], ["c"]])
    assert 0.0 < lexical.overlap(["a", "zzz"]).coverage[0] < 1.0


def test_keywords_and_queries_meet_in_their_match_forms() -> None:
    """Inflections and lexicon synonyms match (both sides are match-formed); the idf is per form."""
    lexical = LexicalIndex([["retries", "payout"], ["segfaults", "parser"], ["cache"]])
    assert lexical.overlap(["retrying", "payouts"]).coverage.tolist() == [1.0, 0.0, 0.0]
    assert lexical.overlap(["panicked", "parsers"]).coverage.tolist() == [0.0, 1.0, 0.0]
    assert set(lexical.idf) == {"retri", "payout", "crash", "parser", "cach"}


@pytest.mark.parametrize(
    ("min_query_words", "coverage"),
    [
        (0.0, 1.0),  # one word the entry holds: covered "completely"
        (1.0, 1.0),  # the floor is one distinctive word, which "test" is here: no change
        (2.0, 0.5),  # too little evidence: coverage scaled down
    ],
)
def test_coverage_is_measured_against_a_minimum_number_of_words(
    min_query_words: float, coverage: float
) -> None:
    lexical = LexicalIndex([["test", "login"], ["pool"], ["cache"]])
    overlap = lexical.overlap(["test"], min_query_words=min_query_words)
    assert overlap.coverage[0] == pytest.approx(coverage)
    assert overlap.jaccard[0] == pytest.approx(lexical.overlap(["test"]).jaccard[0])  # Jaccard unchanged


@pytest.mark.parametrize("n", [1, 2, 20, 500])
def test_the_coverage_floor_means_the_same_at_every_project_size(n: int) -> None:
    """Two distinctive words cover an entry fully whatever the project's size; a common one does not."""
    lexical = LexicalIndex([["login", "timeout", "common"], *([["other", "common"]] * (n - 1))])
    assert lexical.overlap(["login", "timeout"], min_query_words=2.0).coverage[0] == pytest.approx(1.0)
    if n > 1:
        assert lexical.overlap(["common"], min_query_words=2.0).coverage[0] < 0.5


@pytest.mark.parametrize(("n", "df"), [(1, 0), (1, 1), (2, 1), (23, 1), (23, 23), (500, 1), (500, 500)])
def test_idf_is_positive_and_falls_with_document_frequency(n: int, df: int) -> None:
    assert idf(n, df) > 0.0
    assert idf(n, df) < idf(n, df - 1) if df > 0 else idf(n, 0) == pytest.approx(math.log(2 * n + 2))


def test_empty_index() -> None:
    overlap = LexicalIndex([]).overlap(["a"])
    assert overlap.jaccard.shape == (0,) and overlap.coverage.shape == (0,)


def test_an_uncredited_word_counts_in_the_query_but_not_for_those_rows() -> None:
    lexical = LexicalIndex([["attribute", "split"], ["attribute", "header"], ["theme"]])
    plain = lexical.overlap(["attribute", "header"])
    rows = np.array([0, 1, 2], dtype=np.intp)  # row 2 does not hold the word: nothing to take away
    held_back = lexical.overlap(["attribute", "header"], uncredited={"attribut": rows})
    assert held_back.coverage[0] == 0.0 and held_back.jaccard[0] == 0.0
    assert 0.0 < held_back.coverage[1] < plain.coverage[1]  # ``header`` still counts, against both words
    assert held_back.coverage[2] == 0.0
    only_row_1 = lexical.overlap(["attribute"], uncredited={"attribut": np.array([1], dtype=np.intp)})
    assert only_row_1.coverage[0] == pytest.approx(lexical.overlap(["attribute"]).coverage[0])
    assert only_row_1.coverage[1] == 0.0


@given(
    st.dictionaries(
        st.text("abcde", min_size=1, max_size=3), st.lists(st.integers(0, 9), unique=True), max_size=12
    ),
    st.lists(st.text("abcdef", min_size=1, max_size=3), max_size=10),
)
def test_packed_postings_sum_like_a_loop_of_scatter_adds(
    rows_of: dict[str, list[int]], keys: list[str]
) -> None:
    postings = Postings(rows_of, 10)
    ids = postings.key_ids(keys)
    weights = np.arange(1.0, ids.size + 1.0)
    expected = np.zeros(10)
    for weight, key in zip(weights, [k for k in keys if k in rows_of], strict=True):
        expected[rows_of[key]] += weight
    assert np.allclose(postings.weighted_sum(ids, weights), expected)


def test_bm25_length_norm_favours_short_entries_and_is_one_at_the_average_with_b_1() -> None:
    lexical = LexicalIndex([["a"], ["a", "b", "c"], ["a", "b"]])
    norm = lexical.length_norm(1.2, 0.75)
    assert norm[0] > norm[2] > norm[1]
    assert lexical.length_norm(1.2, 1.0)[2] == pytest.approx(1.0)  # length 2 is the average
    assert np.allclose(lexical.length_norm(1.2, 0.0), 1.0)  # b = 0: no normalisation
