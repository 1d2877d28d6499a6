"""Index keywords and the IDF-weighted overlap arithmetic (pure)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from store.index import LexicalIndex, build_index, keywords, usable_index
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
    # "login" is in every entry (idf ln 2), "timeout" in one (idf ln 4): a shared rare word weighs more.
    assert rare.jaccard[0] > common.jaccard[0]
    idf_login, idf_timeout = math.log1p(1.0), math.log1p(3.0)
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


def test_empty_index() -> None:
    overlap = LexicalIndex([]).overlap(["a"])
    assert overlap.jaccard.shape == (0,) and overlap.coverage.shape == (0,)
