"""Recall-quality evaluation: does recall return the right fix, and nothing when nothing is relevant?

Pure metrics (values in, values out) plus a thin runner that builds real stores from the labelled
dataset (``fixmem.eval_dataset``) in a directory and asks them every query. Metric definitions:

- Positives (``expected`` = grade 2, ``related`` = grade 1): ``rr`` = 1 / rank of the first expected
  entry (0 if none in the results); ``hit@k`` = an expected entry is in the top k; ``recall@k`` = share of
  the expected entries in the top k; ``ndcg@k`` with gains 2/1/0 over the graded labels.
- Negatives and isolation probes: ``abstained`` = the store returned nothing.
- Every query: ``leaks`` = returned entries of another owner or project (or of no known origin);
  ``forbidden`` = superseded entries returned.
- Prompt block: ``block_lines`` injected, ``block_relevant`` of them grade >= 1; block precision is
  relevant / injected lines, micro-averaged (a negative probe that injects nothing adds no line).
- Checks: an entry listed in ``regressed`` must carry the regressed flag when returned; an injected line
  is marked ``(stale: …)`` exactly when its entry's commit or a file is gone.

Means are taken over the queries of the kind a metric applies to; a summary reports every category and a
stratified tuning / held-out split (see ``assign_splits``).
"""

from __future__ import annotations

import hashlib
import math
import tempfile
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from fixmem.eval_dataset import EVAL_NOW, Dataset, EntrySpec, ProjectData, QuerySpec, to_fix_entry
from store import FixStore, RankingWeights, Recalled, prompt_block

K = 5
BUDGET_TOKENS = 600
Split = Literal["tune", "held_out"]


@dataclass(frozen=True)
class Thresholds:
    """Quality bars: MRR and hit@5 over positives, abstention over negative and isolation probes."""

    mrr: float
    hit_at_5: float
    abstention: float
    leaks: int


GOALS = Thresholds(mrr=0.90, hit_at_5=0.97, abstention=1.0, leaks=0)  # issue 9
# The suite fails below these (docs/decisions.md, "Recall evaluation", phase 3). The store measures
# MRR 0.958, hit@5 0.962 (150 of 156), abstention 0.986 (72 of 73 probes), leaks 0 on all 229 queries:
# MRR meets its goal, so its floor sits a little under the goal; hit@5 and abstention do not, so theirs
# sit a little under the measured figures (abstention 0.98: one more answered probe fails the suite;
# hit@5 0.95: two more misses do).
FLOORS = Thresholds(mrr=0.88, hit_at_5=0.95, abstention=0.98, leaks=0)


# --- per-query metrics (pure) ---------------------------------------------------------------------


def reciprocal_rank(ranked: Sequence[str], expected: Collection[str]) -> float:
    """1 / (1-based rank of the first expected label in ``ranked``); 0.0 if none is there."""
    for i, label in enumerate(ranked):
        if label in expected:
            return 1.0 / (i + 1)
    return 0.0


def hit_at(ranked: Sequence[str], expected: Collection[str], k: int) -> float:
    """1.0 if an expected label is among the first ``k`` of ``ranked``, else 0.0."""
    return 1.0 if any(label in expected for label in ranked[:k]) else 0.0


def recall_at(ranked: Sequence[str], expected: Collection[str], k: int) -> float:
    """Share of the expected labels found among the first ``k`` of ``ranked`` (1.0 if none expected)."""
    wanted = set(expected)
    if not wanted:
        return 1.0
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def ndcg_at(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """Normalized DCG of the first ``k`` of ``ranked``, gains ``2**grade - 1``; 1.0 if nothing is graded."""

    def dcg(gains: Sequence[int]) -> float:
        return sum(float(2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains[:k]))

    ideal = dcg(sorted((g for g in grades.values() if g > 0), reverse=True))
    if ideal == 0:
        return 1.0
    return dcg([grades.get(label, 0) for label in ranked]) / ideal


def split_of(query_id: str) -> str:
    """A stable hash of a query id, used to order queries inside a category for the split."""
    return hashlib.sha256(query_id.encode("utf-8")).hexdigest()


def assign_splits(queries: Sequence[QuerySpec]) -> dict[str, Split]:
    """Tuning / held-out halves, stratified: within each category, by hash order, alternately. Pure.

    A query that pins its half (``split``) gets it and takes no part in the alternation, so pinned
    queries added later change no other query's half.
    """
    by_category: dict[str, list[str]] = defaultdict(list)
    splits: dict[str, Split] = {}
    for query in queries:
        if query.split is not None:
            splits[query.id] = query.split
        else:
            by_category[query.category].append(query.id)
    for ids in by_category.values():
        for i, query_id in enumerate(sorted(ids, key=split_of)):
            splits[query_id] = "tune" if i % 2 == 0 else "held_out"
    return splits


@dataclass(frozen=True)
class Observation:
    """What recall did for one query, in dataset labels (an id of no known origin reads ``?<id>``)."""

    ranked: tuple[str, ...]  # returned labels, best first
    scores: tuple[float, ...]  # their ranking scores
    leaked: tuple[str, ...] = ()  # returned labels that live in another owner/project (or unknown)
    flagged_regressed: frozenset[str] = frozenset()  # returned labels that carry the regressed flag
    block_labels: tuple[str, ...] = ()  # labels of the entries whose line made it into the block
    stale_checked: int = 0  # injected lines whose stale marking was checked
    stale_ok: int = 0  # ... and matched the dataset (marked exactly when commit or a file is gone)


@dataclass(frozen=True)
class QueryScore:
    """Every metric of one query (positive-only metrics are None for probes, and the reverse)."""

    id: str
    category: str
    kind: str
    split: str
    ranked: tuple[str, ...]
    scores: tuple[float, ...]
    rr: float | None
    hit_at_1: float | None
    hit_at_5: float | None
    recall_at_5: float | None
    ndcg_at_5: float | None
    abstained: bool | None
    leaks: int
    forbidden_returned: int
    block_lines: int
    block_relevant: int
    regressed_checked: int
    regressed_ok: int
    stale_checked: int
    stale_ok: int


def score_query(query: QuerySpec, obs: Observation, split: str, k: int = K) -> QueryScore:
    """All metrics of one query from its labels and what recall did. Pure."""
    positive = query.kind == "positive"
    expected = set(query.expected)
    grades = {label: query.grade(label) for label in (*query.expected, *query.related)}
    returned_regressed = [label for label in query.regressed if label in obs.ranked]
    return QueryScore(
        id=query.id,
        category=query.category,
        kind=query.kind,
        split=split,
        ranked=obs.ranked,
        scores=obs.scores,
        rr=reciprocal_rank(obs.ranked, expected) if positive else None,
        hit_at_1=hit_at(obs.ranked, expected, 1) if positive else None,
        hit_at_5=hit_at(obs.ranked, expected, k) if positive else None,
        recall_at_5=recall_at(obs.ranked, expected, k) if positive else None,
        ndcg_at_5=ndcg_at(obs.ranked, grades, k) if positive else None,
        abstained=None if positive else not obs.ranked,
        leaks=len(obs.leaked),
        forbidden_returned=sum(1 for label in obs.ranked if label in query.forbidden),
        block_lines=len(obs.block_labels),
        block_relevant=sum(1 for label in obs.block_labels if query.grade(label) > 0),
        regressed_checked=len(returned_regressed),
        regressed_ok=sum(1 for label in returned_regressed if label in obs.flagged_regressed),
        stale_checked=obs.stale_checked,
        stale_ok=obs.stale_ok,
    )


# --- aggregation (pure) ---------------------------------------------------------------------------


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


@dataclass(frozen=True)
class Summary:
    """Aggregate metrics over a set of queries; a metric with no applicable query is None."""

    queries: int
    positives: int
    probes: int  # negative + isolation
    mrr: float | None
    hit_at_1: float | None
    hit_at_5: float | None
    recall_at_5: float | None
    ndcg_at_5: float | None
    abstention: float | None
    leaks: int
    forbidden_returned: int
    block_lines: int
    block_relevant: int
    block_precision: float | None
    regressed_flagged: str  # "ok/checked"
    stale_marked: str  # "ok/checked"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return asdict(self)


def summarize(scores: Sequence[QueryScore]) -> Summary:
    """Aggregate per-query scores. Pure."""
    lines = sum(s.block_lines for s in scores)
    relevant = sum(s.block_relevant for s in scores)
    probes = [s for s in scores if s.abstained is not None]
    return Summary(
        queries=len(scores),
        positives=sum(1 for s in scores if s.kind == "positive"),
        probes=len(probes),
        mrr=_mean([s.rr for s in scores]),
        hit_at_1=_mean([s.hit_at_1 for s in scores]),
        hit_at_5=_mean([s.hit_at_5 for s in scores]),
        recall_at_5=_mean([s.recall_at_5 for s in scores]),
        ndcg_at_5=_mean([s.ndcg_at_5 for s in scores]),
        abstention=_mean([1.0 if s.abstained else 0.0 for s in probes]),
        leaks=sum(s.leaks for s in scores),
        forbidden_returned=sum(s.forbidden_returned for s in scores),
        block_lines=lines,
        block_relevant=relevant,
        block_precision=round(relevant / lines, 4) if lines else None,
        regressed_flagged=f"{sum(s.regressed_ok for s in scores)}/{sum(s.regressed_checked for s in scores)}",
        stale_marked=f"{sum(s.stale_ok for s in scores)}/{sum(s.stale_checked for s in scores)}",
    )


def shortfalls(summary: Summary, bar: Thresholds) -> list[str]:
    """Which of ``bar`` the summary misses, as readable lines (``[]`` when it meets them all)."""
    missed: list[str] = []
    checks = (("MRR", summary.mrr, bar.mrr), ("hit@5", summary.hit_at_5, bar.hit_at_5))
    for name, value, floor in (*checks, ("abstention", summary.abstention, bar.abstention)):
        if value is not None and value < floor:
            missed.append(f"{name} {value:.4f} < {floor:.2f}")
    if summary.leaks > bar.leaks:
        missed.append(f"leaks {summary.leaks} > {bar.leaks}")
    return missed


@dataclass(frozen=True)
class EvalReport:
    """The result of one run: summaries overall, per split and per category, and every query."""

    overall: Summary
    splits: dict[str, Summary]
    categories: dict[str, Summary]
    queries: tuple[QueryScore, ...]
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by ``fixmem eval --json``."""
        return {
            "info": self.info,
            "goals": asdict(GOALS),
            "floors": asdict(FLOORS),
            "meets_goals": not shortfalls(self.overall, GOALS),
            "meets_floors": not shortfalls(self.overall, FLOORS),
            "overall": self.overall.to_dict(),
            "splits": {name: s.to_dict() for name, s in self.splits.items()},
            "categories": {name: s.to_dict() for name, s in self.categories.items()},
            "queries": [
                {**asdict(q), "ranked": list(q.ranked), "scores": [round(s, 4) for s in q.scores]}
                for q in self.queries
            ],
        }


def build_report(scores: Sequence[QueryScore], info: Mapping[str, Any] | None = None) -> EvalReport:
    """Summaries overall, per split and per category (in first-seen order). Pure."""
    by_split: dict[str, list[QueryScore]] = defaultdict(list)
    by_category: dict[str, list[QueryScore]] = defaultdict(list)
    for score in scores:
        by_split[score.split].append(score)
        by_category[score.category].append(score)
    return EvalReport(
        overall=summarize(scores),
        splits={name: summarize(by_split[name]) for name in ("tune", "held_out") if name in by_split},
        categories={name: summarize(group) for name, group in by_category.items()},
        queries=tuple(scores),
        info=dict(info or {}),
    )


def expected_supersessions(queries: Sequence[QuerySpec]) -> dict[str, str]:
    """``{older label: newer label}`` the dataset expects the store to reconcile. Pure.

    Read from the ``superseded`` queries: the ``forbidden`` entry is the older duplicate and the
    ``expected`` one the entry that replaces it.
    """
    pairs: dict[str, str] = {}
    for query in queries:
        if query.category == "superseded":
            for older in query.forbidden:
                pairs[older] = query.expected[0]
    return pairs


def expected_stale(project: ProjectData, entry: EntrySpec) -> bool:
    """Whether the store should mark ``entry`` stale: its commit or one of its files is gone."""
    spec = project.spec
    commit_gone = bool(spec.known_commits) and bool(entry.commit) and entry.commit not in spec.known_commits
    file_gone = bool(spec.workspace_files) and any(f not in spec.workspace_files for f in entry.files)
    return commit_gone or file_gone


# --- the runner (thin I/O: real stores in a directory) ---------------------------------------------

STALE_MARK = "(stale:"


@dataclass(frozen=True)
class BuiltEval:
    """The dataset appended into a real store, ready to be queried any number of times."""

    dataset: Dataset
    store: FixStore
    workspaces: Mapping[tuple[str, str], str]  # (owner, project) -> workspace dir, for projects with one
    stale_labels: frozenset[str]  # labels the store should mark stale
    superseded: Mapping[str, str]  # label -> label of the entry that superseded it (as the store decided)


def _materialize_workspace(root: Path, files: Sequence[str]) -> str:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    return str(root)


def build_stores(dataset: Dataset, workdir: Path, *, now: float = EVAL_NOW) -> BuiltEval:
    """Append every project's entries one at a time, oldest first, into a store under ``workdir``.

    Projects with ``workspace_files`` get a workspace directory holding those (empty) files. Raises
    StoreError when the store refuses a write, OSError when ``workdir`` is unwritable.
    """
    store = FixStore(workdir / "data", clock=lambda: now)
    workspaces: dict[tuple[str, str], str] = {}
    stale: set[str] = set()
    superseded: dict[str, str] = {}
    for i, project in enumerate(dataset.projects):
        spec = project.spec
        if spec.workspace_files:
            workspaces[(spec.owner, spec.key)] = _materialize_workspace(
                workdir / "workspaces" / str(i), spec.workspace_files
            )
        for entry_spec in project.entries:
            result = store.append(spec.owner, spec.key, [to_fix_entry(spec, entry_spec, now)])
            for added in result.added:
                if added.supersedes and added.supersedes in dataset.origins:
                    superseded[dataset.origins[added.supersedes].label] = entry_spec.label
            if expected_stale(project, entry_spec):
                stale.add(entry_spec.label)
    return BuiltEval(dataset, store, workspaces, frozenset(stale), superseded)


def _label(built: BuiltEval, entry_id: str) -> str:
    origin = built.dataset.origins.get(entry_id)
    return origin.label if origin else "?" + entry_id


def observe(
    built: BuiltEval,
    query: QuerySpec,
    *,
    weights: RankingWeights | None = None,
    k: int = K,
    budget_tokens: int = BUDGET_TOKENS,
    now: float = EVAL_NOW,
) -> Observation:
    """Ask the store one query and render its prompt block; report both in dataset labels."""
    home = (query.owner, query.project)
    workspace = built.workspaces.get(home)
    project = next(p for p in built.dataset.projects if (p.spec.owner, p.spec.key) == home)
    commits = project.spec.known_commits or None
    files = [f.replace("{workspace}", workspace or "") for f in query.files]
    recalled: list[Recalled] = built.store.recall(
        query.owner,
        query.project,
        query.text,
        files=files,
        errors=list(query.errors),
        k=k,
        workspace=workspace,
        now=now,
        known_commits=commits,
        weights=weights,
    )
    labels = tuple(_label(built, r.entry.id) for r in recalled)
    block = prompt_block(recalled, budget_tokens, known_commits=commits, workspace=workspace, now=now)
    lines = block.splitlines()[1:]  # after the header, one line per entry in recall order
    injected = labels[: len(lines)]
    stale_ok = sum(
        1
        for label, line in zip(injected, lines, strict=True)
        if (STALE_MARK in line) == (label in built.stale_labels)
    )
    leaked = tuple(
        label
        for r, label in zip(recalled, labels, strict=True)
        if (origin := built.dataset.origins.get(r.entry.id)) is None or (origin.owner, origin.project) != home
    )
    return Observation(
        ranked=labels,
        scores=tuple(r.score for r in recalled),
        leaked=leaked,
        flagged_regressed=frozenset(label for r, label in zip(recalled, labels, strict=True) if r.regressed),
        block_labels=injected,
        stale_checked=len(injected),
        stale_ok=stale_ok,
    )


def evaluate(
    built: BuiltEval,
    *,
    weights: RankingWeights | None = None,
    k: int = K,
    budget_tokens: int = BUDGET_TOKENS,
    now: float = EVAL_NOW,
    only: Split | None = None,
) -> EvalReport:
    """Run every query (or one split's) against the built stores and report."""
    splits = assign_splits(built.dataset.queries)
    scores = [
        score_query(
            query,
            observe(built, query, weights=weights, k=k, budget_tokens=budget_tokens, now=now),
            splits[query.id],
            k,
        )
        for query in built.dataset.queries
        if only is None or splits[query.id] == only
    ]
    info = {
        "projects": len(built.dataset.projects),
        "entries": built.dataset.entry_count(),
        "queries": len(scores),
        "k": k,
        "budget_tokens": budget_tokens,
        "now": now,
        "superseded_by_store": dict(sorted(built.superseded.items())),
        "superseded_expected": dict(sorted(expected_supersessions(built.dataset.queries).items())),
        "weights": asdict(weights or built.store.weights),
    }
    return build_report(scores, info)


def run_eval(
    dataset: Dataset,
    *,
    workdir: Path | None = None,
    weights: RankingWeights | None = None,
    k: int = K,
    budget_tokens: int = BUDGET_TOKENS,
    only: Split | None = None,
) -> EvalReport:
    """Build the stores (in a temporary directory unless ``workdir`` is given) and evaluate once."""
    if workdir is not None:
        return evaluate(
            build_stores(dataset, workdir), weights=weights, k=k, budget_tokens=budget_tokens, only=only
        )
    with tempfile.TemporaryDirectory(prefix="fixmem-eval-") as tmp:
        built = build_stores(dataset, Path(tmp))
        return evaluate(built, weights=weights, k=k, budget_tokens=budget_tokens, only=only)
