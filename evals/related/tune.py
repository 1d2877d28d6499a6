"""``python -m evals.related.tune``: the evidence knobs of recall ranking on the TUNING half only.

Replays each repository once through the real extractor (as ``evals.related.run`` does), then asks every
tuning-half query of ``start``, ``one_line``, ``mid_files`` and ``off_topic`` of one ``ProjectView`` per
prefix of the history, for each variant of ``RankingWeights`` below. For each variant the evidence floor
is first set just above the best evidence any off-topic probe reaches (rounded up to 0.01), so the
probes abstain, as the shipped floor was set. Prints one line per variant: same-function hits,
precision and quiet per class. The held-out half is never read here.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evals.related.core import Commit, Repo, Tally, load_repos, related, split_of, turn_event
from evals.related.run import queries_for
from ingest.schema import validate_event
from store import DEFAULT_WEIGHTS, FixEntry, RankingWeights
from store.recall.ranking import evidence
from store.recall.search import recall_view
from store.recall.view import ProjectView, query_terms
from workers.extraction import Limits, extract

CLASSES = ("start", "one_line", "mid_files", "off_topic")
SHA = 10


@dataclass(frozen=True)
class Asked:
    before: int  # entries of earlier commits
    cls: str
    text: str
    files: tuple[str, ...]
    ts: float
    same_function: frozenset[str]
    same_file: frozenset[str]
    sha: str = ""  # the task's commit


def history(repo: Repo, others: Sequence[Repo], split: str = "tune") -> tuple[list[FixEntry], list[Asked]]:
    """The repository's entries in time order and its queries of ``CLASSES`` of ``split`` (the tuning
    half unless a script reports the held-out one)."""
    entries: list[FixEntry] = []
    earlier: list[Commit] = []
    asked: list[Asked] = []
    for position, commit in enumerate(repo.commits):
        if position >= 50 and commit.is_task and earlier and split_of(commit.sha) == split:
            same_fn, same_file = related(commit, earlier)
            for query in queries_for(repo, commit, others, position):
                if query.cls not in CLASSES:
                    continue
                off = query.cls == "off_topic"
                asked.append(
                    Asked(
                        len(entries),
                        query.cls,
                        query.text,
                        query.files,
                        float(commit.ts),
                        frozenset() if off else frozenset(s[:SHA] for s in same_fn),
                        frozenset() if off else frozenset(s[:SHA] for s in same_file),
                        commit.sha,
                    )
                )
        extracted = extract(validate_event(turn_event(repo, commit)), enabled=True, limits=Limits())
        if extracted.entry is not None:
            entries.append(extracted.entry)
            earlier.append(commit)
    return entries, asked


def views(entries: Sequence[FixEntry], asked: Sequence[Asked]) -> Iterator[tuple[Asked, ProjectView]]:
    """Each query with the view of the entries before it (views grow by appending, as the store's do)."""
    view = ProjectView([])
    for query in asked:
        if len(view.entries) < query.before:
            view = view.extend(entries[len(view.entries) : query.before])
        yield query, view


def off_topic_ceiling(data: Sequence[tuple[list[FixEntry], list[Asked]]], weights: RankingWeights) -> float:
    """The floor just above the best evidence of any off-topic probe (rounded up to 0.01)."""
    best = 0.0
    for entries, asked in data:
        for query, view in views(entries, [q for q in asked if q.cls == "off_topic"]):
            signals = view.signals(
                query_terms(query.text, []), files=[], errors=[], workspace=None, weights=weights
            )
            best = max(best, float(evidence(signals, weights)[view.live].max(initial=0.0)))
    return math.floor(best * 100) / 100 + 0.01


def measure(data: Sequence[tuple[list[FixEntry], list[Asked]]], weights: RankingWeights) -> dict[str, Tally]:
    """A tally per class of the tuning half for ``weights``."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    for entries, asked in data:
        for query, view in views(entries, asked):
            got = recall_view(
                view, query.text, files=list(query.files), k=5, now=query.ts, weights=weights,
                file_exists_check=False,
            )  # fmt: skip
            returned = [(r.entry.event_id or "?")[:SHA] for r in got]
            tallies[query.cls].add(returned, query.same_function, query.same_file)
    return tallies


VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("shipped", {}),
    ("no evidence (the old ranking)", {"evidence_floor": 0.0, "untouched_strength": 0.0}),
    ("code keys weigh 1x a word", {"evidence_code": 1.0, "evidence_code_words": 1.0}),
    ("code keys weigh 3x a word", {"evidence_code": 3.0, "evidence_code_words": 3.0}),
    ("no code keys", {"evidence_code": 0.0, "evidence_code_words": 0.0}),
    ("plain words as path segments weigh 0", {"evidence_code_words": 0.0}),
    ("plain words as path segments weigh 1x", {"evidence_code_words": 1.0}),
    ("length power 0 (absolute)", {"evidence_length_power": 0.0}),
    ("length power 0.5", {"evidence_length_power": 0.5}),
    ("a file adds 1.76 (half the floor)", {"evidence_files": 1.76}),
    ("untouched fixes need strength 1.5", {"untouched_strength": 1.5}),
    ("no runner-up", {"runner_up_floor": 0.0}),
    ("BM25 length normalisation of words, b 0.75", {"evidence_bm25_b": 0.75}),
    ("BM25 length normalisation of words, b 0.3", {"evidence_bm25_b": 0.3}),
    ("runner-up at 0.9 and 0.8 of the best", {"runner_up_floor": 0.9, "runner_up_ratio": 0.8}),
    ("runner-up at 0.5 and 0.6 of the best", {"runner_up_floor": 0.5, "runner_up_ratio": 0.6}),
]


def line(name: str, floor: float, tallies: dict[str, Tally]) -> str:
    def cell(cls: str) -> str:
        t = tallies[cls].as_dict()
        if cls == "off_topic":
            return f"off-topic quiet {t['quiet']}/{t['unrelated']}"
        return f"{cls} fn {t['hit_fn']}/{t['with_fn']} P {t['precision']} quiet {t['quiet']}/{t['unrelated']}"

    return f"{name} (floor {floor:.2f}): " + "; ".join(cell(c) for c in CLASSES)


def bound(data: Sequence[tuple[list[FixEntry], list[Asked]]]) -> str:
    """What a perfect gate would give at task start: fixmem's unfloored top ``k`` asked only on the tasks
    that have a related past fix (quiet everywhere else), for k = 1..5: same-function hits and precision.
    """
    weights = replace(DEFAULT_WEIGHTS, floor=0.0)
    tallies = [Tally() for _ in range(5)]
    for entries, asked in data:
        for query, view in views(entries, [q for q in asked if q.cls == "start" and q.same_file]):
            got = recall_view(view, query.text, k=5, now=query.ts, weights=weights, file_exists_check=False)
            returned = [(r.entry.event_id or "?")[:SHA] for r in got]
            for k, tally in enumerate(tallies, start=1):
                tally.add(returned[:k], query.same_function, query.same_file)
    cells = [
        f"top {k}: fn {t.hit_fn}/{t.with_fn} P {t.as_dict()['precision']}" for k, t in enumerate(tallies, 1)
    ]
    return "perfect gate (start, tasks with a related fix only, no floor): " + "; ".join(cells)


def main(argv: Sequence[str] | None = None) -> int:
    names = set(argv if argv is not None else sys.argv[1:])
    repos = load_repos()
    data = [history(repo, [r for r in repos if r.name != repo.name]) for repo in repos]
    if not names or "bound" in names:
        sys.stdout.write(bound(data) + "\n")
    for name, change in VARIANTS:
        if names and name not in names:
            continue
        weights = replace(DEFAULT_WEIGHTS, **change)
        if weights.evidence_floor > 0 and "evidence_floor" not in change:
            weights = replace(weights, evidence_floor=off_topic_ceiling(data, weights))
        sys.stdout.write(line(name, weights.evidence_floor, measure(data, weights)) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
