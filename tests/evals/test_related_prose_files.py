"""The pure parts of ``evals.related.prose_files``: words and profiles of files, the per-file aggregate of
past fixes' cosines, the per-task softmax fit, the confidence count and what recall is given per grid
point (no model, no history needed)."""

from __future__ import annotations

import numpy as np
import pytest

from evals.related.prose_files import (
    FEATURES,
    GRID,
    confident,
    files_for,
    fit,
    path_text,
    per_file,
    profile_text,
    softmax,
    words,
)
from store.localize import Localized


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("SqliteCache.get_shard", ["sqlite", "cache", "get", "shard"]),
        ("crates/uv-cache/src/lib.rs", ["crates", "uv", "cache", "src", "lib", "rs"]),
        ("parseHTTPHeader2", ["parse", "httpheader2"]),
        ("v2_0", ["v2"]),
        ("", []),
    ],
)
def test_words_split_case_separators_and_drop_numbers(name: str, expected: list[str]) -> None:
    assert words(name) == expected


def test_profile_is_the_path_twice_then_distinct_defined_words_capped() -> None:
    assert path_text("mypy/checkexpr.py") == "mypy checkexpr"
    profile = profile_text("mypy/binder.py", ["ConditionalTypeBinder", "Binder.put", "put_if"], limit=4)
    assert profile == "mypy binder mypy binder conditional type binder put"


def test_per_file_takes_the_best_cosine_and_the_mean_of_the_best_two() -> None:
    got = per_file([0.2, 0.8, 0.6], [["a.py", "b.py"], ["a.py"], ["a.py"]])
    assert got["a.py"] == pytest.approx((0.8, 0.7))
    assert got["b.py"] == pytest.approx((0.2, 0.18))  # one fix touched it: 0.9 x its cosine


def test_fit_learns_the_feature_that_marks_the_right_row() -> None:
    rng = np.random.default_rng(0)
    groups = []
    for _ in range(30):
        x = rng.random((4, len(FEATURES)))
        right = np.zeros(4, bool)
        right[int(np.argmax(x[:, 2]))] = True  # the third feature points at the right file
        groups.append((x, right))
    groups.append((rng.random((3, len(FEATURES))), np.zeros(3, bool)))  # no right row: teaches nothing
    w = fit(groups)
    assert int(np.argmax(w)) == 2
    assert softmax(np.array([1.0, 1.0])).tolist() == [0.5, 0.5]


def test_confident_counts_right_tops_among_the_most_confident() -> None:
    tops = [(0.9, True), (0.1, True), (0.5, False), (0.7, True)]
    assert confident(tops, (1, 2, 3, 9)) == {"1": 1, "2": 2, "3": 2}


def test_files_for_adds_or_replaces_only_what_it_should() -> None:
    own = (Localized("named.py", 0.6, "name"),)
    ranked = [("a.py", 0.5), ("named.py", 0.3), ("b.py", 0.1)]
    assert files_for(own, ranked, GRID[0]) == own  # the point without meaning
    add = {"mode": "add", "k": 3, "weight": 0.8, "p_min": 0.2}
    assert [f.path for f in files_for(own, ranked, add)] == ["named.py", "a.py"]
    unsure = {"mode": "replace_unsure", "k": 1, "weight": 0.8, "p_min": 0.0}
    assert [(f.path, f.weight) for f in files_for(own, ranked, unsure)] == [("a.py", 0.8)]
    trusted = (Localized("named.py", 0.9, "name"),)
    assert files_for(trusted, ranked, unsure) == trusted  # the localizer was sure: kept alone
