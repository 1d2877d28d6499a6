"""The recall-eval runner: the labelled dataset appended into a real store in a directory, then asked.

Thin I/O around the pure metrics (``evals.recall.metrics``): every store is built at the fixed
``EVAL_NOW`` and every query asked at it, so a run is reproducible.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from evals.recall.dataset import EVAL_NOW, Dataset, QuerySpec, to_fix_entry
from evals.recall.metrics import (
    BUDGET_TOKENS,
    K,
    Observation,
    Split,
    assign_splits,
    expected_stale,
    expected_supersessions,
    score_query,
)
from evals.recall.report import RecallReport, build_report
from store import FixStore, RankingWeights, Recalled, prompt_block

# How a prompt-block line shows that its entry is stale: ``(stale: commit gone)``, ``(stale: file …)``.
STALE_LINE_PREFIX = "(stale:"


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
    # rotation is not what the evaluation measures: the store keeps every entry of the dataset
    store = FixStore(  # learning from use off: the eval's figures stay comparable across runs
        workdir / "data", cap=max(1, dataset.entry_count()), clock=lambda: now, learn_from_use=False
    )
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
    # after the header, one "- " line per entry in recall order ("Possibly related:" heads the rest)
    lines = [line for line in block.splitlines()[1:] if line.startswith("- ")]
    injected = labels[: len(lines)]
    stale_ok = sum(
        1
        for label, line in zip(injected, lines, strict=True)
        if (STALE_LINE_PREFIX in line) == (label in built.stale_labels)
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
) -> RecallReport:
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
) -> RecallReport:
    """Build the stores (in a temporary directory unless ``workdir`` is given) and evaluate once."""
    if workdir is not None:
        return evaluate(
            build_stores(dataset, workdir), weights=weights, k=k, budget_tokens=budget_tokens, only=only
        )
    with tempfile.TemporaryDirectory(prefix="fixmem-eval-") as tmp:
        built = build_stores(dataset, Path(tmp))
        return evaluate(built, weights=weights, k=k, budget_tokens=budget_tokens, only=only)
