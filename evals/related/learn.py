"""``python -m evals.related.learn``: a learned task-start order on the TUNING half only (an experiment).

Question: does a linear combination of the signals fixmem already computes rank the fixes that changed
a same function higher at task start (text only) than the shipped strength does? The bound of
``python -m evals.related.tune bound`` says the order, not the floor, limits the goal.

For each tuning-half ``start`` and ``off_topic`` query (replayed as ``evals.related.tune`` does), the
``CANDIDATES`` live entries of highest shipped strength (floor off) get the features of ``FEATURES``.
A pointwise logistic model (numpy, L2, Newton steps) is fitted on the start queries that have a
same-file past fix (label 1 for an entry that changed a same function), and a pairwise one (a
same-function fix above a candidate that changed no same file). Printed, for the shipped order and
the learned one: the perfect-gate bound (top 1..5 hits and precision over the tasks with a related fix),
then the gated figures with the learned score's floor set just above the best off-topic probe's score
(as the shipped floor was set), top ``k`` = 1..5, and with the shipped gate choosing whether to answer
and the order choosing which ``k``. A leave-one-repository-out pairwise fit is printed as well: the
same model fitted on three repositories and scored on the fourth, so the figure is not only the fit's
own data.
The held-out half is never read here.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from evals.related.core import Tally, bm25_rank, load_repos
from evals.related.run import entry_text
from evals.related.tune import SHA, Asked, history, views
from store import DEFAULT_WEIGHTS, FixEntry
from store.recall.ranking import Signals, evidence, strength
from store.recall.view import ProjectView, QueryTerms, query_terms

CANDIDATES = 30
FEATURES = (
    "shipped strength",
    "evidence (shipped)",
    "relevance J/C/cos blend / min_score",
    "shared words W/u, damped",
    "W BM25 b 0.75 /u, damped",
    "code keys K/u, damped",
    "plain words as path segments /u, damped",
    "log age in days",
    "rank by shipped strength (log 1+r)",
    "strength minus the query's best",
    "log 1 + files the entry touched",
    "log 1 + entry match forms",
    "log 1 + earlier entries sharing a file (hot spot)",
    "Okapi BM25 with term counts (the baseline's bm25s) / the query's best",
)


@dataclass
class Query:
    repo: int
    cls: str
    x: npt.NDArray[np.float64]  # (candidates, features)
    ids: list[str]
    same_function: frozenset[str]
    same_file: frozenset[str]


@dataclass
class Candidates:
    """One start or off-topic query of the tuning half with the view it is asked of, its signals with
    the floor off, and the ``count`` live entries of highest shipped strength (``order``, rows)."""

    repo: int
    query: Asked
    view: ProjectView
    terms: QueryTerms
    sig: Signals
    value: npt.NDArray[np.float64]  # shipped strength of every entry
    order: npt.NDArray[np.intp]


def candidates(data: Sequence[tuple[list[FixEntry], list[Asked]]], count: int) -> Iterator[Candidates]:
    """``Candidates`` of each tuning-half start and off-topic query (strength ties to the newer entry)."""
    weights = replace(DEFAULT_WEIGHTS, floor=0.0)
    for repo, (entries, asked) in enumerate(data):
        for query, view in views(entries, [q for q in asked if q.cls in ("start", "off_topic")]):
            terms = query_terms(query.text, [])
            sig = view.signals(terms, files=[], errors=[], workspace=None, weights=weights)
            value = strength(sig, weights)
            live = np.flatnonzero(view.live)
            if live.size == 0:
                continue
            order = live[np.lexsort((-view.ts[live], -value[live]))][:count]
            yield Candidates(repo, query, view, terms, sig, value, order)


def features(data: Sequence[tuple[list[FixEntry], list[Asked]]]) -> list[Query]:
    weights = replace(DEFAULT_WEIGHTS, floor=0.0)
    bm25 = replace(weights, evidence_bm25_b=0.75)
    out: list[Query] = []
    for c in candidates(data, CANDIDATES):
        repo, query, view, sig, value, order = c.repo, c.query, c.view, c.sig, c.value, c.order
        unit = max(sig.unit, 1e-9)
        damp = max(sig.query_weight / unit, 1.0) ** weights.evidence_length_power
        norm = view.lexical.length_norm(bm25.evidence_bm25_k1, bm25.evidence_bm25_b)
        rel = (
            weights.jaccard * sig.jaccard
            + weights.coverage * sig.coverage
            + weights.vector * np.maximum(sig.cosine, 0.0)
        ) / weights.min_score
        code = sig.code if sig.code is not None else np.zeros_like(value)
        code_words = sig.code_words if sig.code_words is not None else np.zeros_like(value)
        words = sig.words if sig.words is not None else np.zeros_like(value)
        cols = [
            value[order],
            evidence(sig, weights)[order] / weights.evidence_floor,
            rel[order],
            words[order] / unit / damp,
            (words * norm)[order] / unit / damp,
            code[order] / unit / damp,
            code_words[order] / unit / damp,
            np.log1p(np.maximum(query.ts - view.ts[order], 0.0) / 86_400.0),
            np.log1p(np.arange(order.size, dtype=np.float64)),
            value[order] - value[order[0]],
            np.log1p([len(view.entries[int(r)].files) for r in order]),
            np.log1p(view.lexical.lengths[order]),
            np.log1p([hot(view.entries, int(r)) for r in order]),
            okapi(view.entries, query.text, order),
        ]
        out.append(
            Query(
                repo,
                query.cls,
                np.stack(cols, axis=1),
                [(view.entries[int(r)].event_id or "?")[:SHA] for r in order],
                query.same_function,
                query.same_file,
            )
        )
    return out


def okapi(entries: Sequence[FixEntry], text: str, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """The baseline's BM25 (term counts, which fixmem's keyword sets drop) of ``rows``, over the best."""
    scores = np.zeros(len(entries))
    for i, s in bm25_rank([entry_text(e) for e in entries], text, k=len(entries)):
        scores[i] = s
    best = float(scores.max(initial=0.0))
    result: npt.NDArray[np.float64] = scores[rows] / best if best > 0 else scores[rows]
    return result


def hot(entries: Sequence[FixEntry], row: int) -> float:
    """How many other entries of the view touched a file entry ``row`` touched."""
    files = set(entries[row].files)
    return float(sum(1 for i, e in enumerate(entries) if i != row and files.intersection(e.files)))


def fit_pairs(queries: Sequence[Query], l2: float = 1.0) -> tuple[npt.NDArray[np.float64], ...]:
    """A pairwise logistic fit: a same-function fix above a candidate that changed no same file."""
    rows = [q for q in queries if q.cls == "start" and q.same_function]
    x_all = np.concatenate([q.x for q in rows])
    mean, std = x_all.mean(axis=0), x_all.std(axis=0) + 1e-9
    diffs: list[npt.NDArray[np.float64]] = []
    for q in rows:
        z = (q.x - mean) / std
        pos = [i for i, e in enumerate(q.ids) if e in q.same_function]
        neg = [i for i, e in enumerate(q.ids) if e not in q.same_file]
        diffs.extend(z[p] - z[n] for p in pos for n in neg[:15])
    d = np.array(diffs)
    w = np.zeros(d.shape[1])
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-d @ w))
        grad = -d.T @ (1 - p) + l2 * w
        hess = (d * (p * (1 - p))[:, None]).T @ d + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return mean, std, w, np.array([0.0])


def fit(queries: Sequence[Query], l2: float = 1.0) -> tuple[npt.NDArray[np.float64], ...]:
    """Standardize, then a logistic regression by Newton's method; returns (mean, std, w, bias)."""
    rows = [q for q in queries if q.cls == "start" and q.same_file]
    x = np.concatenate([q.x for q in rows])
    y = np.concatenate([[float(i in q.same_function) for i in q.ids] for q in rows])
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        grad = z.T @ (p - y) + l2 * np.r_[w[:-1], 0.0]
        hess = (z * (p * (1 - p))[:, None]).T @ z + l2 * np.diag(np.r_[np.ones(len(w) - 1), 0.0])
        w -= np.linalg.solve(hess, grad)
    return mean, std, w[:-1], np.array([w[-1]])


def score(q: Query, model: tuple[npt.NDArray[np.float64], ...] | None) -> npt.NDArray[np.float64]:
    if model is None:
        return q.x[:, 0]
    mean, std, w, bias = model
    result: npt.NDArray[np.float64] = ((q.x - mean) / std) @ w + bias[0]
    return result


def shipped_answer(value: npt.NDArray[np.float64], gate: npt.NDArray[np.float64]) -> list[int]:
    """``ranking.rank``'s answer over the candidates ordered by ``value``: nothing unless the best
    ``gate`` (the shipped strength) reaches the floor, then the top 5 at the floor plus the
    runner-up."""
    weights = DEFAULT_WEIGHTS
    if gate.size == 0 or float(gate.max()) < weights.floor:
        return []
    order = np.argsort(-value, kind="stable")
    eligible = [int(i) for i in order if value[i] >= weights.floor]
    if len(order) > 1:
        best, second = float(value[order[0]]), float(value[order[1]])
        floor = max(weights.runner_up_floor * weights.floor, weights.runner_up_ratio * best)
        if floor <= second < weights.floor:
            eligible.append(int(order[1]))
    return eligible[:5]


def bound(queries: Sequence[Query], scores: Sequence[npt.NDArray[np.float64]]) -> str:
    tallies = [Tally() for _ in range(5)]
    for q, s in zip(queries, scores, strict=True):
        if q.cls != "start" or not q.same_file:
            continue
        ranked = [q.ids[i] for i in np.argsort(-s, kind="stable")]
        for k, t in enumerate(tallies, 1):
            t.add(ranked[:k], q.same_function, q.same_file)
    return "; ".join(
        f"top {k}: fn {t.hit_fn}/{t.with_fn} P {t.as_dict()['precision']}" for k, t in enumerate(tallies, 1)
    )


def gated(queries: Sequence[Query], scores: Sequence[npt.NDArray[np.float64]], k: int) -> str:
    """Floor just above the best off-topic score; the top ``k`` at or above it."""
    floor = max(float(s.max()) for q, s in zip(queries, scores, strict=True) if q.cls == "off_topic")
    floor = math.nextafter(floor, math.inf)
    t = Tally()
    for q, s in zip(queries, scores, strict=True):
        if q.cls != "start":
            continue
        order = np.argsort(-s, kind="stable")[:k]
        t.add([q.ids[i] for i in order if s[i] >= floor], q.same_function, q.same_file)
    d = t.as_dict()
    return (
        f"k {k}: start fn {d['hit_fn']}/{d['with_fn']} P {d['precision']} quiet {d['quiet']}/{d['unrelated']}"
    )


def shipped_gate(queries: Sequence[Query], scores: Sequence[npt.NDArray[np.float64]], k: int) -> str:
    """The shipped gate decides whether to answer (the best shipped strength reaches the floor, so quiet
    and off-topic abstention are the shipped ones); ``scores`` choose which ``k`` fixes to show."""
    t = Tally()
    for q, s in zip(queries, scores, strict=True):
        if q.cls == "off_topic":
            continue
        answer = float(q.x[0, 0]) >= DEFAULT_WEIGHTS.floor
        order = np.argsort(-s, kind="stable")[:k] if answer else np.zeros(0, dtype=np.intp)
        t.add([q.ids[i] for i in order], q.same_function, q.same_file)
    d = t.as_dict()
    return (
        f"k {k}: start fn {d['hit_fn']}/{d['with_fn']} P {d['precision']} quiet {d['quiet']}/{d['unrelated']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    repos = load_repos()
    data = [history(repo, [r for r in repos if r.name != repo.name]) for repo in repos]
    queries = features(data)
    shipped = [score(q, None) for q in queries]
    model = fit(queries)
    learned = [score(q, model) for q in queries]
    pairs = fit_pairs(queries)
    paired = [score(q, pairs) for q in queries]
    cv: list[npt.NDArray[np.float64]] = [np.zeros(0)] * len(queries)
    for repo in range(len(data)):
        held = fit_pairs([q for q in queries if q.repo != repo])
        for i, q in enumerate(queries):
            if q.repo == repo:
                cv[i] = score(q, held)
    names = [
        ("shipped strength", shipped),
        ("pointwise logistic (fit on all of tune)", learned),
        ("pairwise logistic (fit on all of tune)", paired),
        ("pairwise, leave one repo out", cv),
    ]
    sys.stdout.write(
        "pairwise weights: "
        + ", ".join(f"{f} {w:+.2f}" for f, w in zip(FEATURES, pairs[2], strict=True))
        + "\n"
    )
    sys.stdout.write(
        "weights (standardized): "
        + ", ".join(f"{f} {w:+.2f}" for f, w in zip(FEATURES, model[2], strict=True))
        + "\n"
    )
    for name, s in names:
        sys.stdout.write(f"{name}: perfect gate: {bound(queries, s)}\n")
        for k in (1, 2, 3, 5):
            sys.stdout.write(f"  {name}: gated at the off-topic ceiling, {gated(queries, s, k)}\n")
        for k in (1, 2, 3):
            sys.stdout.write(f"  {name}: shipped gate, this order, {shipped_gate(queries, s, k)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
