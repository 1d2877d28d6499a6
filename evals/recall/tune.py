"""Search the store's ranking weights on the tuning half of the recall eval; report both halves.

Usage, from the repository root: ``python -m evals.recall.tune [--trials N] [--seed S] [--json]``.

Builds the eval stores once in a temporary directory, then evaluates ``N`` random ``RankingWeights``
(plus the current defaults) on the ``tune`` queries only, with a fixed seed so a run is reproducible.
The objective puts abstention first (the issue's hardest bar: injecting irrelevant fixes makes agents
worse), then MRR and hit@5, then the share of injected lines that are relevant:
``objective = 2 * abstention + MRR + hit@5 + 0.5 * block precision - 0.1 * superseded shown``.
Each candidate is scored by the mean objective with ``min_score`` moved by -15 % to +15 % in 5 % steps,
so a threshold balanced on a knife edge loses to one with room. Candidates under which the store's own
recall tables (``evals.recall.fixtures``, asserted by ``tests/store/test_recall.py``: the right fix
first, abstention, a file alone is not enough) would fail are skipped: those tables are an independent
check written with the store.
The chosen weights (the consensus of the best ten when it holds up, see ``search``) and the best few
are then scored on the ``held_out`` queries, which the search never saw; a large gap between the halves
is overfitting. Nothing is written: copy the chosen values into ``store/recall/ranking.py`` by hand and re-run
``pytest tests/store``.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

import orjson

from evals.recall import DATASET, fixtures
from evals.recall.dataset import load_dataset
from evals.recall.metrics import Summary
from evals.recall.run import BuiltEval, build_stores, evaluate
from store import DEFAULT_WEIGHTS, FixStore, RankingWeights, Recalled

# (low, high) of each weight searched; the rest keep their defaults.
SPACE: dict[str, tuple[float, float]] = {
    "jaccard": (0.0, 1.0),
    "coverage": (0.0, 1.0),
    "files": (0.0, 0.6),
    "errors": (0.0, 0.8),
    "error_type": (0.0, 0.8),
    "vector": (0.0, 1.0),
    "min_score": (0.05, 0.6),
}
# Not searched: ``coverage_min_words`` stays at its reasoned 2 (a query needs two distinctive words'
# weight to cover an entry fully; see store/recall/ranking.py). The tuning half holds too few generic
# probes to tell a damping from none, so searching it overfits (measured:
# docs/decisions/0005-recall-evaluation.md, phase 2).


NEIGHBOURHOOD = (0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15)


def objective(summary: Summary) -> float:
    """Higher is better: abstention first, then MRR and hit@5, then block precision."""
    return (
        2 * (summary.abstention or 0.0)
        + (summary.mrr or 0.0)
        + (summary.hit_at_5 or 0.0)
        + 0.5 * (summary.block_precision or 0.0)
        - 0.1 * summary.forbidden_returned
    )


def robust_objective(built: BuiltEval, weights: RankingWeights) -> float:
    """The tune-half objective averaged over ``min_score`` moved by -15 % to +15 % (5 % steps).

    A threshold that only works on a knife edge (one probe just under it, one paraphrase just over)
    would not survive the next project's entries; averaging over a small neighbourhood prefers weights
    whose figures hold when scores drift.
    """
    total = 0.0
    for factor in NEIGHBOURHOOD:
        moved = dataclasses.replace(weights, min_score=weights.min_score * factor)
        total += objective(evaluate(built, weights=moved, only="tune").overall)
    return total / len(NEIGHBOURHOOD)


def sample(rng: random.Random) -> RankingWeights:
    """A random point of ``SPACE`` (rounded to 3 decimals so it can be copied by hand)."""
    values = {name: round(rng.uniform(low, high), 3) for name, (low, high) in SPACE.items()}
    return dataclasses.replace(DEFAULT_WEIGHTS, **values)


def figures(summary: Summary) -> dict[str, Any]:
    """The figures that matter for tuning."""
    keys = ("mrr", "hit_at_1", "hit_at_5", "abstention", "leaks", "forbidden_returned", "block_precision")
    return {k: summary.to_dict()[k] for k in keys}


class StoreContract:
    """The store's recall tables (``evals.recall.fixtures``) as a test of candidate weights."""

    def __init__(self, data_dir: Path) -> None:
        """Build the store those tables are asked of, under ``data_dir``."""
        # keeps them all; learning from use off, as ``fixmem eval`` runs
        self.store = FixStore(data_dir, cap=len(fixtures.PROJECT_LOG), learn_from_use=False)
        self.store.append(fixtures.OWNER, fixtures.PROJECT, list(fixtures.PROJECT_LOG))

    def holds(self, weights: RankingWeights) -> bool:
        """Whether recall with ``weights`` passes every row of the store's tables."""

        def recall(query: str, **kwargs: Any) -> list[Recalled]:
            return self.store.recall(
                fixtures.OWNER, fixtures.PROJECT, query, now=fixtures.NOW, weights=weights, **kwargs
            )

        for query, kwargs, expected in fixtures.RIGHT_FIX_FIRST:
            hits = recall(query, **kwargs)
            if not hits or hits[0].entry.task != fixtures.PROJECT_LOG[expected - 1].task:
                return False
        if any(recall(query) for query in fixtures.NOTHING_RELEVANT):
            return False
        query, files = fixtures.FILE_ALONE
        return not recall(query, files=files)


# Relevance is linear in these, so only their ratio to ``min_score`` matters; the other searched values
# are a share (error_type) and nats (coverage_min_weight).
LINEAR = ("jaccard", "coverage", "files", "errors", "vector")
CONSENSUS_OF = 10


def consensus(candidates: list[RankingWeights]) -> RankingWeights:
    """The element-wise median of ``candidates``, the linear weights taken relative to each min_score.

    Many weight sets tie on the small tuning half, and which of them comes first is largely chance; the
    median of the best few keeps what they agree on (a consensus generalizes better than one pick).
    """
    min_score = statistics.median(w.min_score for w in candidates)
    values: dict[str, float] = {"min_score": round(min_score, 3)}
    for name in SPACE:
        if name in LINEAR:
            ratio = statistics.median(getattr(w, name) / w.min_score for w in candidates)
            values[name] = round(ratio * min_score, 3)
        elif name != "min_score":
            values[name] = round(statistics.median(getattr(w, name) for w in candidates), 3)
    return dataclasses.replace(DEFAULT_WEIGHTS, **values)


def search(
    built: BuiltEval, contract: StoreContract, trials: int, seed: int, keep: int = 5
) -> list[dict[str, Any]]:
    """Evaluate the defaults and ``trials`` random weights on ``tune``; report the best on both halves.

    The first result after the defaults is the *chosen* one: the consensus (``consensus``) of the best
    ``CONSENSUS_OF`` when it passes the store's tables and scores at least as well on ``tune`` as the
    last of them, else the best single candidate; the defaults themselves (``is_chosen`` on the first
    result) when neither scores better than they do on ``tune``. Then the best ``keep`` candidates, for
    comparison.
    """
    rng = random.Random(seed)
    scored: list[tuple[float, RankingWeights]] = []
    for weights in [DEFAULT_WEIGHTS, *(sample(rng) for _ in range(trials))]:
        if weights == DEFAULT_WEIGHTS or contract.holds(weights):
            scored.append((robust_objective(built, weights), weights))
    scored.sort(key=lambda item: -item[0])
    score_of = {w: score for score, w in scored}
    top = [w for _, w in scored[:CONSENSUS_OF] if w != DEFAULT_WEIGHTS]
    agreed = consensus(top)
    agreed_score = robust_objective(built, agreed)
    good = contract.holds(agreed) and agreed_score >= scored[len(top) - 1][0]
    score_of[agreed] = agreed_score
    chosen = agreed if good else top[0]
    if score_of[chosen] < score_of[DEFAULT_WEIGHTS]:
        chosen = DEFAULT_WEIGHTS  # nothing found scores better on the tuning half: keep what is there
    results = []
    for weights in dict.fromkeys([DEFAULT_WEIGHTS, chosen, agreed, *top[:keep]]):
        report = evaluate(built, weights=weights)
        results.append(
            {
                "weights": {k: v for k, v in dataclasses.asdict(weights).items() if k in SPACE},
                "is_default": weights == DEFAULT_WEIGHTS,
                "is_chosen": weights == chosen,
                "is_consensus": weights == agreed,
                "tune_objective": round(score_of[weights], 4),  # robust_objective on ``tune``
                "tune": figures(report.splits["tune"]),
                "held_out": figures(report.splits["held_out"]),
                "overall": figures(report.overall),
            }
        )
    return results


def main() -> None:
    """Parse arguments, run the search, print the defaults and the best weights found."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset = load_dataset(DATASET)
    with tempfile.TemporaryDirectory(prefix="fixmem-tune-") as tmp:
        built = build_stores(dataset, Path(tmp) / "eval")
        results = search(built, StoreContract(Path(tmp) / "contract"), args.trials, args.seed)
    if args.json:
        print(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode())
        return
    for result in results:
        name = "default" if result["is_default"] else "chosen" if result["is_chosen"] else "candidate"
        name += " (chosen)" if result["is_default"] and result["is_chosen"] else ""
        print(
            name + (" (consensus)" if result["is_consensus"] else ""),
            result["weights"],
            "tune objective",
            result["tune_objective"],
        )
        for half in ("tune", "held_out", "overall"):
            print(f"  {half:<9}", result[half])


if __name__ == "__main__":
    main()
