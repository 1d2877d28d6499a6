"""The plain-Python row of ``embed_many`` (one or two rows) gives the numpy path's bytes exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from store.recall.tokenize import tokenize
from store.recall.vectors import DIM, embed_many

WORDS = ["pool", "timeout", "KeyError", "fetchJson", "cancel", "retry", "x", "data", "é", "the", "a1", "get"]
token_lists = st.lists(st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=12)), max_size=60)


def _numpy_rows(lists: list[list[str]]) -> np.ndarray:  # type: ignore[type-arg]
    padding = [["pad"]] * 3  # three rows or more take the numpy path
    return embed_many([*lists, *padding])[: len(lists)]


@settings(max_examples=300, deadline=None)
@given(st.lists(token_lists, min_size=1, max_size=2))
def test_one_or_two_rows_are_the_numpy_bytes(lists: list[list[str]]) -> None:
    plain = embed_many(lists)
    assert plain.shape == (len(lists), DIM) and plain.dtype == np.float32
    assert plain.tobytes() == _numpy_rows(lists).tobytes()


def test_real_texts_and_no_tokens() -> None:
    lists = [
        tokenize("config.parse(38) fails with TypeError in test_config_38; make it handle missing keys"),
        [],
        tokenize("the pool: pool pool retry, database pool retry"),
    ]
    for tokens in lists:
        assert embed_many([tokens]).tobytes() == _numpy_rows([tokens]).tobytes()
