"""Safe names and path normalization: tables plus properties (pure)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.errors import InvalidKey
from store.paths import normalize_path, path_suffix_match, project_files, safe_name

SAFE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$")


@pytest.mark.parametrize(
    ("raw", "readable"),
    [
        ("alice", "alice"),
        ("/home/u/app", "home_u_app"),
        ("a/b", "a_b"),
        ("a_b", "a_b"),
        ("..", ""),
        ("../../etc/passwd", "etc_passwd"),
        ("C:\\Users\\bob\\proj", "C_Users_bob_proj"),
        ("日本語", ""),
        ("a\x00b", "a_b"),
        (".hidden", "hidden"),
    ],
)
def test_safe_name_keeps_a_readable_slug_and_a_hash(raw: str, readable: str) -> None:
    name = safe_name(raw)
    assert SAFE.match(name)
    slug, _, digest = name.rpartition("-") if readable else ("", "", name)
    assert slug == readable
    assert re.fullmatch(r"[0-9a-f]{12}", digest)


def test_names_that_slug_alike_never_share_a_file() -> None:
    assert safe_name("a/b") != safe_name("a_b")
    assert safe_name("App") != safe_name("app")


def test_empty_names_are_refused() -> None:
    with pytest.raises(InvalidKey):
        safe_name("")


@given(st.text(min_size=1, max_size=300))
def test_any_name_is_one_safe_path_component(raw: str) -> None:
    name = safe_name(raw)
    assert SAFE.match(name) and not name.startswith(".")
    assert len(name) <= 61
    root = Path("/data/fix_memory")
    files = project_files(root, raw, raw)
    for path in (files.log, files.index, files.quarantine, files.lock):
        assert path.parent.parent == root
        assert path.resolve().is_relative_to(root)


@given(st.text(min_size=1), st.text(min_size=1))
def test_distinct_names_get_distinct_safe_names(a: str, b: str) -> None:
    if a != b:
        assert safe_name(a) != safe_name(b)


@pytest.mark.parametrize(
    ("path", "workspace", "expected"),
    [
        ("src/x.py", None, "src/x.py"),
        ("./src/x.py", None, "src/x.py"),
        ("src//x.py", None, "src/x.py"),
        ("src/./lib/../x.py", None, "src/x.py"),
        ("/ws/app/src/x.py", "/ws/app", "src/x.py"),
        ("/ws/app/src/x.py", "/ws/app/", "src/x.py"),
        ("./src/x.py", "/ws/app", "src/x.py"),
        ("/elsewhere/x.py", "/ws/app", "/elsewhere/x.py"),
        ("/ws/application/x.py", "/ws/app", "/ws/application/x.py"),
        ("src\\win\\x.py", None, "src/win/x.py"),
        ("src/dir/", None, "src/dir"),
        ("  src/x.py  ", None, "src/x.py"),
        ("", None, ""),
        (".", None, ""),
        ("//x.py", None, "/x.py"),
        ("/ws/app", "/ws/app", ""),
    ],
)
def test_normalize_path(path: str, workspace: str | None, expected: str) -> None:
    assert normalize_path(path, workspace) == expected


@given(st.text(alphabet="ab/._", max_size=30))
def test_normalize_path_is_idempotent(path: str) -> None:
    once = normalize_path(path)
    assert normalize_path(once) == once


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("src/x.py", "src/x.py", True),
        ("/home/u/app/src/x.py", "src/x.py", True),
        ("x.py", "src/x.py", True),
        ("src/x.py", "rc/x.py", False),
        ("lib/x.py", "src/x.py", False),
        ("/a/x.py", "/b/x.py", False),
        ("", "", False),
    ],
)
def test_path_suffix_match(a: str, b: str, same: bool) -> None:
    assert path_suffix_match(a, b) is same
    assert path_suffix_match(b, a) is same
