"""The one tokenizer (index and queries) and the hashed vectors built on it (pure)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.recall.lexicon import groups
from store.recall.tokenize import LEXICON, STOPWORDS, match_form, match_forms, tokenize, unique
from store.recall.vectors import DIM, cosine, embed, embed_many


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("fix the login timeout bug", ["login", "timeout"]),
        ("Fix Login Timeout", ["login", "timeout"]),
        ("get_user_by_id", ["get_user_by_id", "get", "user", "id"]),
        ("getUserById", ["getuserbyid", "get", "user", "id"]),
        ("HTTPServerError", ["httpservererror", "http", "server", "error"]),
        ("ValueError: timeout after # seconds", ["valueerror", "value", "error", "timeout", "seconds"]),
        ("src/auth/login.py", ["src", "auth", "login", "py"]),
        ("os.path.join", ["os", "path", "join"]),
        (
            "requests.exceptions.ConnectionError",
            ["requests", "exceptions", "connectionerror", "connection", "error"],
        ),
        ("py311 sha256 E0308 TS2345", ["py311", "sha256", "e0308", "ts2345"]),
        ("error:0308010C:digital", ["error", "0308010c", "digital"]),  # a hex code is not camelCase
        ("Http2Server", ["http2server", "http2", "server"]),
        ("JWTs and URLs", ["jwt", "url"]),  # an acronym's plural s is no camelCase word
        ("getURLs", ["geturls", "get", "url"]),
        ("IDsList", ["idslist", "id", "list"]),  # IDs + List
        ("3 passed, 12 failed in 0.5s; HTTP 404", ["passed", "failed", "5s", "http", "404"]),
        ("__init__", ["init"]),
        ("a I x", []),
        ("Über große Datei", ["über", "grosse", "datei"]),
        ("登录超时", ["登录", "录超", "超时"]),
        ("", []),
    ],
)
def test_tokenize_table(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


@given(st.text(max_size=200))
def test_tokens_are_folded_nonempty_and_never_stopwords(text: str) -> None:
    for token in tokenize(text):
        assert token and token == token.casefold()
        assert token not in STOPWORDS
        assert not any(c.isspace() for c in token)


@given(st.text(max_size=100), st.text(max_size=100))
def test_tokenizing_is_compositional_over_whitespace(a: str, b: str) -> None:
    assert tokenize(a + " " + b) == tokenize(a) + tokenize(b)


def test_unique_keeps_first_seen_order() -> None:
    assert unique(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


@pytest.mark.parametrize(
    ("words", "same"),
    [
        (["retry", "retries", "retrying", "retried"], True),  # the stemmer folds inflections
        (["invoice", "invoices"], True),
        (["match", "matches", "matching"], True),
        (["commit", "commits", "committed"], True),
        (["crash", "crashes", "panic", "panicked", "segfault", "sigsegv"], True),  # lexicon group
        (["hang", "hangs", "hung", "stuck"], True),
        (["config", "configuration", "configured", "cfg", "conf"], True),
        (["ctx", "context"], True),
        (["err", "error", "errors"], True),
        (["timezone", "timezones", "utc", "tz"], True),
        (["429", "throttled", "throttling"], True),
        (["crash", "hang"], False),  # two groups stay apart
        (["set", "config"], False),  # "settings" stems to "set": left out of the lexicon
        (["page", "pagination"], False),  # "paging" stems to "page": left out
        (["local", "i18n"], False),  # "locale" stems to "local": left out
        (["segment", "crash"], False),  # "segmentation" stems to "segment": left out
        (["author", "permission"], False),  # "authorization" stems to "author": left out
        (["frozen", "hang"], False),  # Python's frozen dataclasses
        (["double", "duplicate"], False),  # a float type
        (["token", "login"], False),
    ],
)
def test_match_form_table(words: list[str], same: bool) -> None:
    forms = {match_form(w) for w in words}
    assert (len(forms) == 1) is same, forms


@pytest.mark.parametrize(
    "token",
    ["get_user", "py311", "0308010c", "ts2345", "über", "登录", "5s", "404", "x_"],
)
def test_match_form_leaves_non_words_alone(token: str) -> None:
    """Only ASCII words of 3+ letters are stemmed: identifiers, codes and other scripts are kept."""
    assert match_form(token) == token


def test_tokens_stay_plain_in_the_index() -> None:
    """Stemming happens at match time: ``tokenize`` (the on-disk index keywords) does not stem."""
    assert tokenize("retries invoices segfaults") == ["retries", "invoices", "segfaults"]
    # each folds with its base word (and segfault into the crash group), whatever the stemmer spells it as
    assert match_forms(tokenize("retries invoices segfaults")) == [
        match_form("retry"),
        match_form("invoice"),
        match_form("crash"),
    ]
    assert len(set(match_forms(["retry", "invoice", "crash"]))) == 3


def test_every_lexicon_word_maps_to_its_group_and_no_word_is_a_stopword() -> None:
    for group in groups():
        assert len(group) >= 2, group
        name = match_form(group[0])
        for word in group:
            assert word not in STOPWORDS
            assert tokenize(word) == [word], word  # the tokenizer keeps it as one token
            assert match_form(word) == name, (word, group)
    assert set(LEXICON.values()) == {match_form(g[0]) for g in groups()}


@given(st.text(max_size=30))
def test_match_forms_are_nonempty_and_folded(text: str) -> None:
    for token in tokenize(text):
        form = match_form(token)
        assert form and form == form.casefold()


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        ("fix login timeout", "fix the login timeout bug", 0.99, 1.01),
        ("KeyError in user serializer", "serializer raises KeyError for user", 0.85, 1.0),
        ("login timeouts", "login timeout", 0.99, 1.01),  # the stemmer folds the plural
        ("server segfaults on startup", "server panics on startup", 0.99, 1.01),  # lexicon group
        ("fetchJson never returns", "fetch never returns", 0.5, 0.95),  # n-grams: a compound is close
        ("fix login timeout", "add login rate limiting", 0.0, 0.6),
        ("update the readme", "fix login timeout", -0.2, 0.2),
    ],
)
def test_cosine_table(a: str, b: str, low: float, high: float) -> None:
    assert low <= cosine(embed(tokenize(a)), embed(tokenize(b))) <= high


@given(st.lists(st.text(min_size=1, max_size=12), max_size=20))
def test_vectors_are_unit_or_zero(tokens: list[str]) -> None:
    vector = embed(tokens)
    assert vector.shape == (DIM,) and vector.dtype == np.float32
    norm = float(np.linalg.norm(vector))
    assert norm == pytest.approx(1.0, abs=1e-5) or (norm == 0.0 and not tokens)


def test_embed_many_matches_embed() -> None:
    lists = [
        tokenize("login timeout"),
        [],
        tokenize("database pool exhausted"),
        tokenize("the pool: pool pool retry, database pool retry"),  # repeats: weighed by their count
    ]
    matrix = embed_many(lists)
    for row, tokens in enumerate(lists):
        assert np.allclose(matrix[row], embed(tokens), atol=1e-6)


def test_vectors_are_the_same_in_another_process() -> None:
    """Feature hashing must not depend on PYTHONHASHSEED (no builtin ``hash``)."""
    code = "from store.recall.vectors import embed; print(embed(['login','timeout']).tobytes().hex())"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {embed(["login", "timeout"]).tobytes().hex() + "\n"}
