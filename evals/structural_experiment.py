"""Experiment record: two changes to the store's scoring that weights alone cannot make, measured.

Usage, from the repository root: ``python -m evals.structural_experiment [--trials N] [--seed S]``.

NOT product code. It patches the store in this process only (``store/`` is not modified) and reruns the
weight search of ``evals/tune_recall.py`` (same objective, same store-contract filter, same seed), so the
figures quoted in docs/decisions.md ("Recall evaluation") can be reproduced. It reaches into private
names of ``store.tokenize`` and ``store.index`` as of commit afb69a3; if those change, port the two
patches, do not trust a silent run. The changes:

- ``stem``: a light plural stemmer in the tokenizer (``invoices`` -> ``invoice``, ``retries`` ->
  ``retry``; not ``-ss``, ``-us``, ``-is``), applied to index and queries alike.
- ``damp``: coverage (the share of the query's keyword weight an entry holds) is multiplied by
  ``min(1, query IDF mass / 6)``, so a query whose only keyword is ``test`` ("fix the bug in the test")
  no longer covers an entry "completely".
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import store.index
import store.tokenize
from evals.tune_recall import StoreContract, search
from fixmem.eval_dataset import load_dataset
from fixmem.eval_recall import build_stores

DATASET = Path(__file__).resolve().parent / "recall"
DAMP_IDF_MASS = 6.0


def _stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def apply(changes: set[str]) -> None:
    """Patch the store's tokenizer and/or lexical overlap in this process."""
    tokenize_mod: Any = sys.modules["store.tokenize"]
    index_mod: Any = sys.modules["store.index"]
    if "stem" in changes:
        plain: Callable[[str], list[str]] = tokenize_mod._plain_tokens
        tokenize_mod._plain_tokens = lambda word: [_stem(t) for t in plain(word)]
        tokenize_mod._word_tokens.cache_clear()
    if "damp" in changes:
        overlap = index_mod.LexicalIndex.overlap

        def damped(self: Any, query_tokens: Sequence[str]) -> Any:
            result = overlap(self, query_tokens)
            mass = sum(self.idf.get(w, self.unknown_idf) for w in tokenize_mod.unique(list(query_tokens)))
            return index_mod.Overlap(result.jaccard, result.coverage * min(1.0, mass / DAMP_IDF_MASS))

        index_mod.LexicalIndex.overlap = damped


def main() -> None:
    """Apply the changes, search weights on the tuning half, print the best on both halves."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", default="stem,damp", help="comma-separated: stem, damp")
    parser.add_argument("--trials", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=9)
    args = parser.parse_args()
    assert store.index and store.tokenize  # imported for their side effect on sys.modules
    apply(set(args.changes.split(",")))
    with tempfile.TemporaryDirectory(prefix="fixmem-structural-") as tmp:
        built = build_stores(load_dataset(DATASET), Path(tmp) / "eval")
        results = search(built, StoreContract(Path(tmp) / "contract"), args.trials, args.seed, keep=3)
    for result in results:
        print("current defaults" if result["is_default"] else "candidate", result["weights"])
        for half in ("tune", "held_out", "overall"):
            print(f"  {half:<9}", result[half])


if __name__ == "__main__":
    main()
