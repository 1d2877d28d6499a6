"""The change-content signal of ``evals.related.changes``: what it reads of a change and how it weighs it."""

from __future__ import annotations

import numpy as np
import pytest

from evals.related.changes import change_forms, hunk_forms, ident_forms, signal
from store.recall.index import idf
from store.recall.tokenize import match_form


def test_change_forms_read_the_changed_code_not_the_head() -> None:
    forms = change_forms(
        ("checker.py · TypeChecker.check_call: return None → return self.resolveAlias(node)",)
    )
    assert {match_form("resolve"), match_form("alias"), match_form("node")} <= forms
    assert match_form("checker") not in forms  # the head names the file and function, the code keys' job


def test_ident_forms_are_the_code_the_text_names() -> None:
    forms = ident_forms("The `resolveAlias` call in check_call crashes when the alias is missing")
    assert {match_form("resolve"), match_form("alias"), match_form("check")} <= forms
    assert match_form("missing") not in forms  # a plain word is not an identifier


def test_hunk_forms_read_only_changed_lines() -> None:
    forms = hunk_forms([{"lines": [" context_only()", "-old_name(x)", "+new_name(x)"]}])
    assert {match_form("old"), match_form("new")} <= forms
    assert match_form("context") not in forms


def test_signal_is_idf_in_units_of_a_rare_form() -> None:
    sets = [frozenset({"alias", "node"}), frozenset({"node"}), frozenset()]
    got = signal(sets, frozenset({"alias", "node"}), np.arange(3))
    unit = idf(3, 1)
    assert got.tolist() == pytest.approx([1.0 + idf(3, 2) / unit, idf(3, 2) / unit, 0.0])
