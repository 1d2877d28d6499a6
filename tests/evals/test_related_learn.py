"""The learned-order experiment's instrument (evals/related/learn.py): the fits recover a known order and
the tallies count what the gates return. Today's figures are reported in
docs/decisions/0028-task-start-learned-order.md, not floored."""

from __future__ import annotations

import numpy as np

from evals.related.learn import FEATURES, Query, bound, fit, fit_pairs, gated, score, shipped_gate


def synthetic(seed: int) -> list[Query]:
    """Start queries whose related fix has the highest value of feature 1, while feature 0 (the shipped
    strength column, sorted descending as the tool sorts candidates) is noise; plus off-topic probes."""
    rng = np.random.default_rng(seed)
    out = []
    for n in range(60):
        x = rng.normal(size=(6, len(FEATURES)))
        x[:, 0] = np.sort(rng.normal(size=6))[::-1] + 1.0
        x[n % 6, 1] = 5.0  # the related one
        ids = [f"q{n}e{i}" for i in range(6)]
        out.append(Query(0, "start", x, ids, frozenset({ids[n % 6]}), frozenset({ids[n % 6]})))
    out.append(
        Query(0, "off_topic", rng.normal(size=(6, len(FEATURES))), ["o"] * 6, frozenset(), frozenset())
    )
    return out


def test_both_fits_put_the_related_fix_first() -> None:
    queries = synthetic(0)
    for model in (fit(queries), fit_pairs(queries)):
        assert model[2][1] > 0  # the informative feature gets a positive weight
        first = [
            q.ids[int(np.argmax(score(q, model)))] in q.same_function for q in queries if q.cls == "start"
        ]
        assert all(first)
    assert bound(queries, [score(q, fit_pairs(queries)) for q in queries]).startswith("top 1: fn 60/60 P 1.0")


def test_the_shipped_order_is_column_zero_and_the_gates_count_what_they_return() -> None:
    queries = synthetic(1)
    shipped = [score(q, None) for q in queries]
    assert all(np.array_equal(s, q.x[:, 0]) for q, s in zip(queries, shipped, strict=True))
    # one related fix per query, so precision at k is hits / (k · answered)
    learned = [score(q, fit_pairs(queries)) for q in queries]
    assert shipped_gate(queries, learned, 2).startswith("k 2: start fn ")
    line = gated(queries, learned, 1)
    hits = int(line.split("fn ")[1].split("/")[0])
    assert hits >= 55  # the floor sits above the off-topic probe's best, below most related fixes' scores
