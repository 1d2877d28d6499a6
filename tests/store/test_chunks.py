"""The one-pass reading of a query text gives what tokenize, code_terms and embed give on the whole text."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.recall.chunks import read_chunk, read_text
from store.recall.code import code_terms
from store.recall.index import LexicalIndex
from store.recall.tokenize import match_forms, tokenize, unique
from store.recall.vectors import embed, embed_packed, token_features
from store.recall.view import query_terms

PIECES = [
    "getURLs", "JWTs", "HTTPServerError", "__init__", "日本語", "a_b_c", "Foo.bar()", "`x.y`",
    "`run_target()`",
    "src/a/b.py", "crates/uv-cli/src/lib.rs", 'File "x.py", line 3, in f', "cache.Package", "$scope",
    "retrying", "segfaults", "the", "fix", "42", "1234", "@angular/build:", "[mypyc]", "lib.rs,", "(see",
    "config)", "über", "naïve", "x", "\n", "\t", " ", "  ", "-", "...", "é",
]  # fmt: skip


def _same(text: str) -> None:
    read = read_text(text)
    tokens = tokenize(text)
    assert read.tokens == tokens
    assert read.forms == unique(match_forms(unique(tokens)))
    assert read.code == code_terms(text)
    assert read.vector.tobytes() == embed(tokens).tobytes()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n ",
        "fix: `FieldSelection` panics in gopls/internal/golang/stubmethods when cache.Package is nil",
        'Traceback:\n  File "mypy/checker.py", line 3, in check_first_pass\nValueError: bad getURLs JWTs',
        "retrying retries retry: the same word three times, twice the same chunk chunk chunk",
        "日本語のテキスト and HTTPServerError in src/a/b.py",
    ],
)
def test_read_text_is_the_three_readings(text: str) -> None:
    _same(text)


@given(st.lists(st.sampled_from(PIECES), max_size=40), st.text(max_size=60))
def test_read_text_is_the_three_readings_for_any_text(pieces: list[str], noise: str) -> None:
    _same("".join(pieces) + noise)
    _same(" ".join(pieces))


def test_embed_packed_keeps_repeats_as_counts() -> None:
    tokens = ["timeout", "retry", "timeout", "cache", "timeout"]
    features = [token_features(t) for t in tokens]
    packed = embed_packed(*(b"".join(f[i] for f in features) for i in range(4)))
    assert packed.tobytes() == embed(tokens).tobytes()


def test_query_terms_forms_give_the_same_overlap() -> None:
    index = LexicalIndex([tokenize(t) for t in ["retry the payout", "parser panics on tabs", "cache stale"]])
    for errors in ([], ["ValueError: parser failed on tabs"]):
        terms = query_terms("the parser panicked; retrying payouts did not help", errors)
        with_forms = index.overlap(terms.tokens, min_query_words=2.0, forms=terms.forms)
        without = index.overlap(terms.tokens, min_query_words=2.0)
        assert with_forms.jaccard.tolist() == without.jaccard.tolist()
        assert with_forms.coverage.tolist() == without.coverage.tolist()
        assert with_forms.query_weight == without.query_weight


def test_memoized_chunks_leave_the_garbage_collector_nothing_to_walk() -> None:
    # A set is always tracked by the collector; a tuple of strings stops being tracked at the first
    # collection it survives (a tuple of such tuples, at the next). The memos hold tens of thousands of
    # chunks (docs/decisions/0042-cold-tail-is-the-garbage-collector.md).
    read = [read_chunk(c) for c in ("cache.Package", "src/a/b.py,", "getURLs", "plain", "`x.y`")]
    gc.collect()
    gc.collect()
    assert not any(gc.is_tracked(chunk) for chunk in read)
    assert not any(gc.is_tracked(keys) for chunk in read for keys in chunk[2])
