"""The by-query analysis's pieces (``evals.related.by_query``): ROC AUC, the signals a task is compared by,
and the drop rule's tally. The analysis itself replays the committed histories (half a minute): run by
hand, its figures in ``results/by_query.json`` and decision 0070."""

from __future__ import annotations

from evals.related.by_query import Answer, auc, dropping, identifiers, jaccard, prefix


def test_auc_is_the_chance_a_related_answer_scores_above_an_unrelated_one() -> None:
    assert auc([(0.9, True), (0.8, True), (0.1, False), (0.2, False)]) == 1.0
    assert auc([(0.1, True), (0.9, False)]) == 0.0
    assert auc([(0.5, True), (0.5, False)]) == 0.5  # a tie counts half
    assert auc([(0.9, True), (0.3, False), (0.95, False)]) == 0.5
    assert auc([(0.9, True)]) is None  # no unrelated answer: undefined


def test_the_signals_read_code_names_paths_and_the_titles_component() -> None:
    found = identifiers("Fix `parse_row()` in src/csv/reader.py when dialectName is unset")
    assert {"parse_row()", "parse_row", "src/csv/reader.py", "reader", "dialectname"} <= found
    assert "when" not in found and "fix" not in found
    assert prefix("gopls/internal/server: fix a crash") == "gopls/internal/server"
    assert prefix("fix(@angular/build): keep the cache") == "@angular/build"
    assert prefix("[mypyc] Fix boxing") == "mypyc"
    assert prefix("Fix boxing of floats") is None
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == 1 / 3
    assert jaccard(frozenset(), frozenset({"b"})) == 0.0


def _answer(later: bool, related: bool, query: int, score: float) -> Answer:
    return Answer(later, related, "followed_before", {"words": score}, {"words": 0.0}, 1, 1, ("r", query))


def test_dropping_counts_precision_and_hits_of_what_is_kept_in_one_half() -> None:
    found = [
        _answer(True, True, 1, 0.9),
        _answer(True, False, 1, 0.1),
        _answer(True, False, 2, 0.2),
        _answer(False, True, 3, 0.0),  # the other half: not counted
    ]
    assert dropping(found, True, lambda a: True) == (1 / 3, 1, 3)
    assert dropping(found, True, lambda a: a.followers["words"] > 0.5) == (1.0, 1, 1)
    assert dropping(found, True, lambda a: False) == (0.0, 0, 0)
