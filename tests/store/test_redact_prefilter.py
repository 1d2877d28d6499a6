"""The redaction anchor prefilter changes speed, never results."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from store import redact as redaction

FRAGMENTS = [
    "password=", "PASSWORD: ", "token=", "api_key=", "apikey:", "access-key=", "client_secret=", "pwd=",
    "Authorization: Bearer ", "bearer ", "https://", "user:pass@", "AKIA", "ghp_", "github_pat_", "sk-",
    "xoxb-", "eyJ", ".", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "aws", "secret",
    "hooks.slack.com/services/", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij0123", "x" * 20, " ", "\n", "'", '"',
    "0123456789", "abcdefghijklmnop",
]  # fmt: skip


def _redact_without_prefilter(text: str) -> str:
    for name, pattern, replacement in redaction._RULES:
        if name == "aws_secret_access_key":
            text = pattern.sub(
                lambda m: redaction.REDACTED if redaction._aws_secret_context(m.string, m) else m.group(0),
                text,
            )
        else:
            text = pattern.sub(replacement, text)
    return text


@settings(max_examples=400)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=12).map("".join))
def test_prefilter_never_changes_the_result(text: str) -> None:
    assert redaction.redact(text) == _redact_without_prefilter(text)


def test_text_without_anchors_is_returned_as_is() -> None:
    text = "changed src/app.py; tests: 3 passed"
    assert not redaction.might_hold_secret(text)
    assert redaction.redact(text) is text


def _any_anchor(text: str) -> bool:
    low = text.lower()
    return any(anchor in low for anchor in redaction._ANCHORS)


ANCHOR_PIECES = [
    *redaction._ANCHORS,
    *(a[:-1] for a in redaction._ANCHORS),
    *(a.upper() for a in redaction._ANCHORS),
]


@settings(max_examples=600)
@given(st.lists(st.one_of(st.sampled_from(ANCHOR_PIECES), st.text(max_size=6)), max_size=10).map("".join))
def test_the_anchor_trie_finds_exactly_what_substring_tests_find(text: str) -> None:
    assert redaction.might_hold_secret(text) is _any_anchor(text)


def test_each_anchor_alone_and_inside_text_is_found() -> None:
    for anchor in redaction._ANCHORS:
        assert redaction.might_hold_secret(anchor)
        assert redaction.might_hold_secret(f"x {anchor.upper()} y")
        assert redaction.might_hold_secret(anchor[:-1]) is _any_anchor(anchor[:-1])
