"""Reconcile by meaning (pure): rewordings supersede, different meanings and worse outcomes do not.

Each scenario is also run through ``exact_text_reconcile``, a matcher on exact task text, and the test
checks that it would get the scenario wrong: so these tests fail if matching were done on exact text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from store.entry import FixEntry
from store.reconcile import OUTCOME_RANK, choose_superseded, file_set, meaning_vector, reconcile
from tests.store.factories import make_entry


def _run(existing: Sequence[FixEntry], new: Sequence[FixEntry]) -> list[FixEntry]:
    vectors = (
        np.vstack([meaning_vector(e) for e in existing]) if existing else np.zeros((0, 2048), np.float32)
    )
    return reconcile(existing, vectors, new)


def exact_text_reconcile(existing: Sequence[FixEntry], new: Sequence[FixEntry]) -> list[FixEntry]:
    """The naive alternative: supersede a live entry with the exact same task text and outcome rank."""
    out = []
    pool = list(existing)
    for entry in new:
        target = next(
            (
                old.id
                for old in reversed(pool)
                if old.task == entry.task and OUTCOME_RANK[entry.outcome] >= OUTCOME_RANK[old.outcome]
            ),
            None,
        )
        entry = entry.model_copy(update={"supersedes": target})
        pool.append(entry)
        out.append(entry)
    return out


def test_a_reworded_task_supersedes() -> None:
    old = make_entry(1, "fix login timeout", files=["src/auth.py"], errors=["TimeoutError: login took # s"])
    new = make_entry(
        2, "fix the login timeout bug", files=["./src/auth.py"], errors=["TimeoutError: login took # s"]
    )
    assert _run([old], [new])[0].supersedes == old.id
    assert exact_text_reconcile([old], [new])[0].supersedes is None  # exact text would miss it


def test_a_reworded_task_with_a_new_error_wording_supersedes() -> None:
    old = make_entry(
        1, "session cache returns stale user", files=["src/cache.py"], errors=["KeyError: 'user'"]
    )
    new = make_entry(
        2, "the session cache returns a stale user", files=["src/cache.py"], errors=["KeyError: 'user'"]
    )
    assert _run([old], [new])[0].supersedes == old.id
    assert exact_text_reconcile([old], [new])[0].supersedes is None


def test_the_same_words_with_a_different_meaning_do_not_supersede() -> None:
    """Same task text, but another failing test, another error, other files: not the same fix."""
    old = make_entry(
        1, "fix the flaky test", files=["tests/test_api.py"], errors=["TimeoutError: request took # s"]
    )
    new = make_entry(
        2, "fix the flaky test", files=["tests/test_db.py"], errors=["IntegrityError: duplicate key value"]
    )
    assert _run([old], [new])[0].supersedes is None
    assert exact_text_reconcile([old], [new])[0].supersedes == old.id  # exact text would wrongly match


def test_shared_words_in_another_part_of_the_code_do_not_supersede() -> None:
    old = make_entry(1, "fix login timeout", files=["src/auth.py"])
    new = make_entry(2, "fix login timeout", files=["web/login.tsx"])
    assert _run([old], [new])[0].supersedes is None
    assert exact_text_reconcile([old], [new])[0].supersedes == old.id


def test_a_worse_outcome_never_replaces_a_better_one() -> None:
    fixed = make_entry(1, "fix login timeout", files=["src/auth.py"], outcome="fixed")
    retry = make_entry(2, "fix the login timeout bug", files=["src/auth.py"], outcome="partial")
    again = make_entry(3, "login timeout fix", files=["src/auth.py"], outcome="fixed")
    result = _run([fixed], [retry, again])
    assert result[0].supersedes is None  # the failed retry does not hide the fix
    assert result[1].supersedes == fixed.id  # a later fix that holds does
    naive = exact_text_reconcile([fixed], [retry, again])
    assert naive[1].supersedes != fixed.id  # exact text would never link the rewording


@pytest.mark.parametrize(
    ("old_outcome", "new_outcome", "supersedes"),
    [
        ("fixed", "fixed", True),
        ("partial", "fixed", True),
        ("unverified", "partial", True),
        ("unverified", "unverified", True),
        ("fixed", "partial", False),
        ("fixed", "unverified", False),
        ("partial", "unverified", False),
    ],
)
def test_outcome_order(old_outcome: str, new_outcome: str, supersedes: bool) -> None:
    old = make_entry(1, "fix login timeout", files=["src/auth.py"], outcome=old_outcome)  # type: ignore[arg-type]
    new = make_entry(2, "fix the login timeout bug", files=["src/auth.py"], outcome=new_outcome)  # type: ignore[arg-type]
    assert (_run([old], [new])[0].supersedes == old.id) is supersedes


def test_only_live_entries_are_superseded_and_a_chain_forms() -> None:
    a = make_entry(1, "fix login timeout", files=["src/auth.py"])
    b = make_entry(2, "fix the login timeout", files=["src/auth.py"])
    c = make_entry(3, "fix the login timeout bug", files=["src/auth.py"])
    first = _run([a], [b])
    second = _run([a, *first], [c])
    assert first[0].supersedes == a.id
    assert second[0].supersedes == b.id  # a is already superseded: the chain grows from its head


def test_within_one_batch_later_entries_supersede_earlier_ones() -> None:
    a = make_entry(1, "fix login timeout", files=["src/auth.py"])
    b = make_entry(2, "fix the login timeout bug", files=["src/auth.py"])
    assert [e.supersedes for e in _run([], [a, b])] == [None, a.id]


def test_a_given_supersedes_is_kept() -> None:
    a = make_entry(1, "fix login timeout", files=["src/auth.py"])
    imported = make_entry(2, "unrelated", files=["x.py"], supersedes=a.id)
    assert _run([a], [imported])[0].supersedes == a.id


def test_choose_superseded_prefers_the_closest_then_the_better_outcome_then_the_latest() -> None:
    new = make_entry(9, "t", files=["a.py"])
    older = make_entry(1, "t", files=["a.py"])
    newer = make_entry(2, "t", files=["a.py"])
    failed = make_entry(3, "t", files=["a.py"], outcome="partial")
    assert choose_superseded(new, [0.9, 0.9], [older, newer]) == newer.id
    assert choose_superseded(new, [0.9, 0.9000000001], [older, newer]) == newer.id  # float noise ignored
    assert choose_superseded(new, [0.95, 0.9], [older, newer]) == older.id
    assert choose_superseded(new, [0.9, 0.9], [older, failed]) == older.id
    assert choose_superseded(new, [0.5, 0.81], [older, newer]) is None


def test_file_set_normalizes() -> None:
    assert file_set(make_entry(1, files=["./src/a.py", "src/a.py", "", "src/b/../c.py"])) == {
        "src/a.py",
        "src/c.py",
    }


def test_another_task_on_the_same_file_does_not_supersede() -> None:
    old = make_entry(1, "fix login timeout", files=["src/auth.py"])
    new = make_entry(2, "add rate limiting to the login form", files=["src/auth.py"])
    assert _run([old], [new])[0].supersedes is None
