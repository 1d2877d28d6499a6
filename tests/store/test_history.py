"""Supersession, lineages and regressions derived from the log (pure)."""

from __future__ import annotations

import pytest

from store.history import RegressionRule, canonical_error, error_type, lineage, regressions, superseded_by
from tests.store.factories import make_entry


@pytest.mark.parametrize(
    ("signature", "canonical", "kind"),
    [
        ("ValueError: timeout after 30 seconds", "valueerror: timeout after # seconds", "valueerror"),
        ("ValueError:   Timeout after # seconds", "valueerror: timeout after # seconds", "valueerror"),
        ("error[E0308]: mismatched types", "error[e0308]: mismatched types", "error[e0308]"),
        (
            "panic: runtime error: index out of range [3]",
            "panic: runtime error: index out of range [#]",
            None,
        ),
        ("segfault at 0xdeadbeef", "segfault at 0x#", None),
        ("TypeError: py311 only", "typeerror: py311 only", "typeerror"),
        ("error: linker failed", "error: linker failed", None),
    ],
)
def test_canonical_error_and_type(signature: str, canonical: str, kind: str | None) -> None:
    assert canonical_error(signature) == canonical
    assert error_type(signature) == kind


def test_supersession_only_points_backwards() -> None:
    a = make_entry(1)
    b = make_entry(2, supersedes=a.id)
    # A hand-edited cycle: a line cannot supersede a line that comes after it.
    c = make_entry(3, supersedes=make_entry(4).id)
    d = make_entry(4, supersedes=c.id)
    assert superseded_by([a, b, c, d]) == {a.id: b.id, c.id: d.id}
    assert superseded_by([b, a]) == {}


def test_lineage_is_the_chain_oldest_first() -> None:
    a = make_entry(1)
    b = make_entry(2, supersedes=a.id)
    other = make_entry(3)
    c = make_entry(4, supersedes=b.id)
    log = [a, b, other, c]
    for member in (a, b, c):
        assert [e.id for e in lineage(log, member.id)] == [a.id, b.id, c.id]
    assert lineage(log, other.id) == [other]
    assert lineage(log, "fix-0000000000000000") == []


def test_lineage_survives_a_forgotten_link() -> None:
    a = make_entry(1)
    c = make_entry(3, supersedes=make_entry(2).id)  # its predecessor was forgotten
    assert lineage([a, c], c.id) == [c]


@pytest.mark.parametrize(
    ("later", "regressed"),
    [
        ({"outcome": "partial", "errors": ["KeyError: 'user_id'"], "files": ["src/other.py"]}, True),
        ({"outcome": "partial", "errors": ["keyerror:  'user_id'"], "files": ["src/other.py"]}, True),
        ({"outcome": "partial", "errors": [], "files": ["src/auth.py", "src/session.py"]}, True),
        ({"outcome": "partial", "errors": [], "files": ["./src/auth.py", "src/session.py"]}, True),
        ({"outcome": "partial", "errors": [], "files": ["src/auth.py", "a.py", "b.py", "c.py"]}, False),
        ({"outcome": "partial", "errors": ["TypeError: x"], "files": ["src/other.py"]}, False),
        ({"outcome": "fixed", "errors": ["KeyError: 'user_id'"], "files": ["src/auth.py"]}, False),
        ({"outcome": "unverified", "errors": ["KeyError: 'user_id'"], "files": ["src/auth.py"]}, False),
    ],
)
def test_regression_table(later: dict, regressed: bool) -> None:  # type: ignore[type-arg]
    fix = make_entry(
        1, "user lookup crashes", files=["src/auth.py", "src/session.py"], errors=["KeyError: 'user_id'"]
    )
    after = make_entry(2, "something later", **later)
    found = regressions([fix, after])
    assert (fix.id in found) is regressed
    if regressed:
        assert found[fix.id] == after.id


def test_an_earlier_partial_is_not_a_regression() -> None:
    partial = make_entry(1, outcome="partial", errors=["KeyError: 'user_id'"])
    fix = make_entry(2, errors=["KeyError: 'user_id'"])
    assert regressions([partial, fix]) == {}


def test_the_first_later_partial_is_named() -> None:
    fix = make_entry(1, errors=["E: x"])
    first = make_entry(2, outcome="partial", errors=["E: x"])
    second = make_entry(3, outcome="partial", errors=["E: x"])
    assert regressions([fix, first, second]) == {fix.id: first.id}


def test_regression_rule_is_tunable() -> None:
    fix = make_entry(1, files=["a.py", "b.py"])
    partial = make_entry(2, outcome="partial", files=["a.py", "c.py", "d.py"])
    assert regressions([fix, partial]) == {}
    assert regressions([fix, partial], RegressionRule(min_file_jaccard=0.25)) == {fix.id: partial.id}
