"""Secret redaction: every documented secret shape goes, its label stays, ordinary text is untouched."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.redact import REDACTED, redact, redact_obj

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key AKIAIOSFODNN7EXAMPLE here", f"key {REDACTED} here"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            f"aws_secret_access_key = {REDACTED}",
        ),
        ("AWS secret: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", f"AWS secret: {REDACTED}"),
        (f"git clone with {GHP}", f"git clone with {REDACTED}"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", REDACTED),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", f"OPENAI_API_KEY={REDACTED}"),
        ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz", f"key {REDACTED}"),
        ("xoxb-1234567890-abcdefghijkl", REDACTED),
        ("xapp-1-A0123456789-1234567890123-abcdef", REDACTED),
        ("https://hooks.slack.com/services/T000/B000/XXXXXXXX", REDACTED),
        (f"token {JWT}", f"token {REDACTED}"),
        ("Authorization: Bearer abc.def.ghi-jkl", f"Authorization: Bearer {REDACTED}"),
        ("authorization: Basic dXNlcjpwYXNzd29yZA==", f"authorization: Basic {REDACTED}"),
        ("curl -H 'Bearer abcdefgh12345678'", f"curl -H 'Bearer {REDACTED}'"),
        ("password=hunter2hunter2", f"password={REDACTED}"),
        ('{"password": "hunter2hunter2"}', f'{{"password": "{REDACTED}"}}'),
        ("DB_PASSWORD: 'correct-horse'", f"DB_PASSWORD: '{REDACTED}'"),
        ("client_secret=abcdef123456&x=1", f"client_secret={REDACTED}&x=1"),
        ("X-Api-Key: abcdef123456", f"X-Api-Key: {REDACTED}"),
        ("secretKey: abcdefgh123", f"secretKey: {REDACTED}"),
        ("https://alice:s3cr3t@example.com/repo.git", f"https://{REDACTED}@example.com/repo.git"),
        ("postgres://admin:pw123456@db:5432/app", f"postgres://{REDACTED}@db:5432/app"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", REDACTED),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\ntruncated", REDACTED),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", REDACTED),
        ("AIzaSyA1234567890abcdefghijklmnopqrstuv", REDACTED),
        ("glpat-abcdefghij1234567890", REDACTED),
        ("npm_abcdefghijklmnopqrstuvwxyz0123456789", REDACTED),
        ("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", REDACTED),
    ],
)
def test_secrets_are_redacted_and_labels_kept(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "token count: 5",
        "passwords must be at least 8 characters",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "pip install scikit-learn",
        "see src/secrets.py and tests/test_token.py",
        "def get_token(self):",
        "token = get_token()",
        'password = os.environ["PW"]',
        "tokenizer=bert-base-uncased",
        "https://example.com/path?q=1",
        "ValueError: timeout after # seconds",
        "changed auth.py, session.py; tests: 3 passed",
        "",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_idempotent() -> None:
    once = redact(f"password=hunter2hunter2 {GHP} Authorization: Bearer abcdefgh12345678")
    assert redact(once) == once


def test_redact_obj_walks_json_values_and_keeps_keys() -> None:
    value = {"password": ["x", {"token": f"use {GHP}"}], "n": 3, "ok": True, "none": None}
    assert redact_obj(value) == {
        "password": ["x", {"token": f"use {REDACTED}"}],
        "n": 3,
        "ok": True,
        "none": None,
    }


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
SECRETS = st.one_of(
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16).map(lambda s: "AKIA" + s),
    st.text(ALNUM, min_size=36, max_size=40).map(lambda s: "ghp_" + s),
    st.text(ALNUM + "_", min_size=30, max_size=50).map(lambda s: "github_pat_" + s),
    st.text(ALNUM + "-_", min_size=20, max_size=40).filter(lambda s: s[0].isalnum()).map(lambda s: "sk-" + s),
    st.text(ALNUM, min_size=12, max_size=30).map(lambda s: "xoxp-12-" + s),
    st.text(ALNUM, min_size=16, max_size=30).map(lambda s: "sk_live_" + s),
    st.text(ALNUM, min_size=30, max_size=40).map(lambda s: "hf_" + s),
)
CONTEXT = st.text("äöü ,;:\n\t()[]{}<>|", max_size=30)
SEPARATORS = st.sampled_from([" ", "\n", "=", ":", '"', "'", "(", "/"])


@settings(max_examples=400)
@given(before=CONTEXT, sep_a=SEPARATORS, secret=SECRETS, sep_b=SEPARATORS, after=CONTEXT)
def test_a_generated_secret_embedded_anywhere_is_removed(
    before: str, sep_a: str, secret: str, sep_b: str, after: str
) -> None:
    text = before + sep_a + secret + sep_b + after
    out = redact(text)
    assert secret not in out
    assert REDACTED in out
