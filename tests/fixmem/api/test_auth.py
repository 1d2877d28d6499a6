"""fixmem.api.auth: token configuration (env and file) and the owner lookup."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixmem.api.auth import TokenConfigError, TokenMap, load_tokens, parse_tokens
from fixmem.settings import Settings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("t1:alice,t2:bob", {"t1": "alice", "t2": "bob"}),
        (" t1 : alice , , t2:bob ", {"t1": "alice", "t2": "bob"}),
        ("t1:org:team", {"t1": "org:team"}),  # the token ends at the first colon
        ("t1:alice,t1:alice", {"t1": "alice"}),
        ("", {}),
    ],
)
def test_parse_tokens_table(text: str, expected: dict[str, str]) -> None:
    assert parse_tokens(text, source="FIXMEM_API_TOKENS") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("t1alice", "entry 1: expected token:owner"),
        ("t1:alice,:bob", "entry 2: the token must be"),
        ("t1:", "entry 1: empty owner"),
        ("t1:../etc", "not a valid owner name"),
        ("t1:a/b", "not a valid owner name"),
        ("t1:alice,t1:bob", "entry 2: this token is already given to another owner"),
        ("to ken:alice", "non-space"),
        ("t1:al\x00ice", "control character"),
    ],
)
def test_parse_tokens_refuses_with_the_position_not_the_token(text: str, message: str) -> None:
    with pytest.raises(TokenConfigError, match=message) as caught:
        parse_tokens(text, source="FIXMEM_API_TOKENS")
    assert "t1" not in str(caught.value).replace("entry 1", "")


def test_file_and_env_tokens_are_merged(tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text(
        "# who may read\n\nfile-token-0123456789:carol\n  other-file-token-012345:dave  \n"
    )
    settings = Settings.from_env(
        {"FIXMEM_API_TOKENS": "env-token-0123456789:alice", "FIXMEM_API_TOKENS_FILE": str(tokens_file)}
    )
    tokens = load_tokens(settings)
    assert len(tokens) == 3
    assert tokens.owner("file-token-0123456789") == "carol"
    assert tokens.owner("other-file-token-012345") == "dave"
    assert tokens.owner("env-token-0123456789") == "alice"
    assert "env-token" not in repr(settings)  # a SecretStr: never printed


def test_an_unreadable_tokens_file_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings.from_env({"FIXMEM_API_TOKENS_FILE": str(tmp_path / "missing")})
    with pytest.raises(TokenConfigError, match=r"FIXMEM_API_TOKENS_FILE .*missing: cannot read it"):
        load_tokens(settings)


@given(
    st.dictionaries(
        st.text(st.characters(blacklist_categories=("Zs", "Cc")), min_size=1, max_size=40).filter(
            lambda t: ":" not in t and t.strip() == t and not any(ch.isspace() for ch in t)
        ),
        st.sampled_from(["alice", "bob", "carol"]),
        max_size=8,
    ),
    st.text(max_size=50),
)
def test_owner_finds_exactly_the_configured_tokens(tokens: dict[str, str], probe: str) -> None:
    mapping = TokenMap(tokens)
    for token, owner in tokens.items():
        assert mapping.owner(token) == owner
    assert mapping.owner(probe) == tokens.get(probe)
    assert mapping.owner(None) is None
    assert mapping.owner("") is None
