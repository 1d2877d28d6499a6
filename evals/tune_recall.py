"""Search the store's ranking weights on the tuning half of the recall eval; report both halves.

Usage: ``python evals/tune_recall.py [--trials N] [--seed S] [--json]``. Builds the eval stores once in a
temporary directory, then evaluates ``N`` random ``RankingWeights`` (plus the current defaults) on the
``tune`` queries only, with a fixed seed so a run is reproducible. The objective puts abstention first
(the issue's hardest bar: injecting irrelevant fixes makes agents worse), then MRR and hit@5, then the
share of injected lines that are relevant:
``objective = 2 * abstention + MRR + hit@5 + 0.5 * block precision - 0.1 * superseded shown``.
The best few are then scored on the ``held_out`` queries, which the search never saw; a large gap
between the halves is overfitting.
Nothing is written: copy the chosen values into ``store/ranking.py`` by hand and re-run the store tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import tempfile
from pathlib import Path
from typing import Any

import orjson

from fixmem.eval_dataset import load_dataset
from fixmem.eval_recall import BuiltEval, Summary, build_stores, evaluate
from store import DEFAULT_WEIGHTS, RankingWeights

DATASET = Path(__file__).resolve().parent / "recall"

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


def objective(summary: Summary) -> float:
    """Higher is better: abstention first, then MRR and hit@5, then block precision."""
    return (
        2 * (summary.abstention or 0.0)
        + (summary.mrr or 0.0)
        + (summary.hit_at_5 or 0.0)
        + 0.5 * (summary.block_precision or 0.0)
        - 0.1 * summary.forbidden_returned
    )


def sample(rng: random.Random) -> RankingWeights:
    """A random point of ``SPACE`` (rounded to 3 decimals so it can be copied by hand)."""
    values = {name: round(rng.uniform(low, high), 3) for name, (low, high) in SPACE.items()}
    return dataclasses.replace(DEFAULT_WEIGHTS, **values)


def figures(summary: Summary) -> dict[str, Any]:
    """The figures that matter for tuning."""
    keys = ("mrr", "hit_at_1", "hit_at_5", "abstention", "leaks", "forbidden_returned", "block_precision")
    return {k: summary.to_dict()[k] for k in keys}


def search(built: BuiltEval, trials: int, seed: int, keep: int = 5) -> list[dict[str, Any]]:
    """Evaluate the defaults and ``trials`` random weights on ``tune``; the best ``keep`` on both halves."""
    rng = random.Random(seed)
    scored: list[tuple[float, RankingWeights]] = []
    for weights in [DEFAULT_WEIGHTS, *(sample(rng) for _ in range(trials))]:
        tune = evaluate(built, weights=weights, only="tune").overall
        scored.append((objective(tune), weights))
    scored.sort(key=lambda item: -item[0])
    best = [w for _, w in scored[:keep]]
    results = []
    for weights in [DEFAULT_WEIGHTS, *best]:
        report = evaluate(built, weights=weights)
        results.append(
            {
                "weights": {k: v for k, v in dataclasses.asdict(weights).items() if k in SPACE},
                "is_default": weights == DEFAULT_WEIGHTS,
                "tune": figures(report.splits["tune"]),
                "held_out": figures(report.splits["held_out"]),
                "overall": figures(report.overall),
            }
        )
    return results


def main() -> None:
    """Parse arguments, run the search, print the defaults and the best weights found."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset = load_dataset(DATASET)
    with tempfile.TemporaryDirectory(prefix="fixmem-tune-") as tmp:
        results = search(build_stores(dataset, Path(tmp)), args.trials, args.seed)
    if args.json:
        print(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode())
        return
    for result in results:
        print("default" if result["is_default"] else "candidate", result["weights"])
        for half in ("tune", "held_out", "overall"):
            print(f"  {half:<9}", result[half])


if __name__ == "__main__":
    main()
