"""Supersession, lineages and regressions derived from the log (pure)."""

from __future__ import annotations

import pytest

from store.history import RegressionRule, lineage, regressions, superseded_by
from tests.store.factories import make_entry


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


@pytest.mark.parametrize(
    ("later_error", "regressed"),
    [
        ("RuntimeError: could not connect", True),  # the bare error the fix's pytest summary wraps
        ("E       RuntimeError: could not connect", True),
        ("FAILED tests/test_net.py::test_connect - RuntimeError: could not connect", True),
        ("tests/test_other.py::test_x - RuntimeError: could not connect", False),  # another test failed
        ("ConnectionError: could not connect", False),
    ],
)
def test_a_regression_is_the_same_error_in_any_runner_form(later_error: str, regressed: bool) -> None:
    fix = make_entry(
        1, files=["src/net.py"], errors=["tests/test_net.py::test_connect - RuntimeError: could not connect"]
    )
    after = make_entry(2, outcome="partial", files=["src/other.py"], errors=[later_error])
    assert (fix.id in regressions([fix, after])) is regressed


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
