"""``python -m evals.related.workspace``: task-start recall in workspace mode (issue 32, item 3).

At task start a harness stands in a checkout. Workspace mode localizes the task text against it
(``store.localize``: names, paths, frames and messages → likely files, weighted) and passes the files to
recall (``FixStore.recall(localized=...)``). Here each replayed task's workspace is the checkout of its
commit's first parent. Full histories are not fetchable in CI, so the per-task index data is derived by
hand and committed (``evals.related.checkout``; ``data/workspace/*.json.gz``)::

    python -m evals.related.workspace build --git-dir /work/.mirror/python+mypy/repo   # by hand, per repo
    python -m evals.related.workspace            # the table, from the committed data
    python -m evals.related.workspace --write    # also results/workspace.json and docs/evaluation.md

The replay is ``evals.related.tune``'s (the real extractor, one view per prefix of the history, learning
from use off, meaning off). Per ``start`` task of each half, side by side: text only (the shipped
recall), workspace mode (text + localized files), mid-task (text + the files the commit changed, the
``mid_files`` class) and BM25 (top 5, score above 0): same-function hits in the top 5, precision
(returned fixes that changed a file the task's fix changed / all returned) and quiet (tasks with no
related past fix that got nothing back). Also the localizer's own accuracy (share of tasks where its top
file is among the files the commit changed, and how often it answers) and the latency of ``localize()``
per task over the restricted index (median, p99) beside the build's over the full one.

The ``localized_*`` knobs of ``RankingWeights`` and the localizer's ``min_weight`` are chosen on the
tuning half (``GRID``, ``choose``); the held-out half is only reported. The *history prior* (the
localizer told which files past fixes touched: ``localize(touched=...)``) is searched the same way over
``GRID`` × ``UNTOUCHED`` and reported beside it (``workspace_prior``), with whether it beat the shipped
point on the tuning half.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evals.related.checkout import build_arguments, built, chosen_repo, data_path, derive, read, write
from evals.related.core import DATA_DIR, Repo, Tally, bm25_rank, load_repos, write_section
from evals.related.run import entry_text
from evals.related.tune import SHA, Asked, history, views
from store import DEFAULT_WEIGHTS, RankingWeights
from store.localize import CheckoutIndex, Localized, localize
from store.localize.resolve import DEFAULT_WEIGHTS as LOCALIZE_DEFAULTS
from store.localize.resolve import LocalizeWeights
from store.recall.search import recall_view
from store.recall.view import ProjectView

HERE = Path(__file__).parent
RESULT = HERE / "results" / "workspace.json"
K = 5
SYSTEMS = (
    "text_only",
    "workspace",
    "workspace_most_hits",
    "workspace_prior",
    "one_file_bound",
    "mid_task",
    "bm25",
)
BOUND_WEIGHT = 0.8  # ``one_file_bound``: one file the commit changed and past fixes touched, at this weight
UNTOUCHED = (0.25, 0.5, 1.0)  # the history prior's share of a file no past fix touched
GRID: list[dict[str, float]] = [
    {
        "min_weight": m,
        "localized_files": f,
        "localized_trust": t,
        "localized_untouched": u,
        "localized_unsure": v,
    }
    for m in (0.5, 0.6)
    for f in (3.0, 6.0)
    for t in (0.6, 0.7, 0.8)
    for u in (1.25, 1.5, 2.0, 3.0)
    for v in (1.0, 1.25, 1.5, 1.75)
]
GOAL_SHARE = 0.85  # of the mid-task hits
GOAL_PRECISION = 0.8


@dataclass(frozen=True)
class Task:
    """One start query with its view, the restricted index of its workspace, and what it must find."""

    asked: Asked
    view: ProjectView
    index: CheckoutIndex
    files: tuple[str, ...]  # the files the commit changed (mid-task's known files)
    changed: frozenset[str]  # ... without changelogs and lock files (precision's and the localizer's gold)
    corpus: tuple[str, ...]  # BM25's text of each earlier entry
    build_seconds: float  # ``localize`` over the full index, when the data was built
    touched: frozenset[str] = frozenset()  # the files the view's past fixes touched (the history prior)


def load_tasks(repos: Sequence[Repo], split: str, data_dir: Path = DATA_DIR) -> list[Task]:
    """The ``start`` queries of ``split`` of every repository with workspace data."""
    out: list[Task] = []
    for repo in repos:
        path = data_path(data_dir, repo.name)
        if not path.exists():
            continue
        derived = read(path)["tasks"]
        commits = {c.sha: c for c in repo.commits}
        entries, asked = history(repo, [r for r in repos if r.name != repo.name], split)
        texts = [entry_text(e) for e in entries]
        for query, view in views(entries, [q for q in asked if q.cls == "start"]):
            if query.sha not in derived:
                continue
            commit = commits[query.sha]
            out.append(
                Task(
                    asked=query,
                    view=view,
                    index=CheckoutIndex.from_json(derived[query.sha]["index"]),
                    files=commit.files,
                    changed=commit.gold_files,
                    corpus=tuple(texts[: query.before]),
                    build_seconds=float(derived[query.sha]["full_index_seconds"]),
                    touched=frozenset(p for files in view.file_sets for p in files),
                )
            )
    return out


def answer(task: Task, system: str, weights: RankingWeights, located: Sequence[Localized] = ()) -> list[str]:
    """What ``system`` returns for ``task`` (short shas, best first)."""
    q = task.asked
    if system == "one_file_bound":  # a bound, not a system: a localizer right about one useful file
        system, located = "workspace", tuple(Localized(p, BOUND_WEIGHT, "bound") for p in bound_file(task))
    if system == "bm25":
        return [(task.view.entries[i].event_id or "?")[:SHA] for i, _ in bm25_rank(task.corpus, q.text, K)]
    got = recall_view(
        task.view, q.text, files=list(task.files) if system == "mid_task" else None, k=K, now=q.ts,
        weights=weights, file_exists_check=False, localized=located if system == "workspace" else None,
    )  # fmt: skip
    return [(r.entry.event_id or "?")[:SHA] for r in got]


def bound_file(task: Task) -> list[str]:
    """The first (by name) file the commit changed that past fixes touched: what ``one_file_bound`` gets."""
    return sorted(task.changed & task.touched)[:1]


def located(
    tasks: Sequence[Task], weights: LocalizeWeights, prior: bool = False
) -> list[tuple[Localized, ...]]:
    """The localizer's answer per task (``prior``: told the files past fixes touched)."""
    return [
        localize(t.asked.text, t.index, weights=weights, touched=t.touched if prior else None) for t in tasks
    ]


def tally(tasks: Sequence[Task], answers: Sequence[Sequence[str]]) -> Tally:
    out = Tally()
    for task, got in zip(tasks, answers, strict=True):
        out.add(got, task.asked.same_function, task.asked.same_file)
    return out


def split_weights(choice: dict[str, float]) -> tuple[RankingWeights, LocalizeWeights]:
    """The recall and localizer weights of one grid point."""
    knobs = {k: v for k, v in choice.items() if k.startswith("localized_")}
    ranking = replace(DEFAULT_WEIGHTS, localized_min_weight=choice["min_weight"], **knobs)
    untouched = choice.get("untouched", LOCALIZE_DEFAULTS.untouched)
    return ranking, replace(LOCALIZE_DEFAULTS, min_weight=choice["min_weight"], untouched=untouched)


def search(tasks: Sequence[Task], untouched: float | None = None) -> list[dict[str, Any]]:
    """Every grid point's workspace figures on ``tasks`` (the tuning half), best first: the points at
    the goal's precision first, then by hits, precision and quiet. ``untouched``: with the history
    prior, at that share."""
    rows = []
    by_min: dict[float, list[tuple[Localized, ...]]] = {}
    for point in GRID if untouched is None else [{**p, "untouched": untouched} for p in GRID]:
        ranking, loc = split_weights(point)
        if loc.min_weight not in by_min:
            by_min[loc.min_weight] = located(tasks, loc, prior=untouched is not None)
        found = by_min[loc.min_weight]
        t = tally(
            tasks, [answer(task, "workspace", ranking, f) for task, f in zip(tasks, found, strict=True)]
        )
        rows.append({"point": point, **t.as_dict()})
    return sorted(rows, key=rank_key)


def rank_key(row: dict[str, Any]) -> tuple[float, ...]:
    precision = row["precision"] or 0.0
    return (-(precision >= GOAL_PRECISION), -row["hit_fn"], -precision, -row["quiet"])


def most_hits(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The grid point with the most tuning hits (ties: precision): the other end of the trade-off."""
    best = max(rows, key=lambda r: (r["hit_fn"], r["precision"] or 0.0, r["quiet"]))
    point: dict[str, float] = best["point"]
    return point


def accuracy(tasks: Sequence[Task], found: Sequence[tuple[Localized, ...]]) -> dict[str, Any]:
    """How often the localizer answers, and how often its top file is one the commit changed."""
    answered = [(t, f) for t, f in zip(tasks, found, strict=True) if f]
    top = sum(1 for t, f in answered if f[0].path in t.changed)
    useful = sum(1 for t, f in answered if f[0].path in t.changed & t.touched)
    any_hit = sum(1 for t, f in answered if any(loc.path in t.changed for loc in f))
    return {
        "tasks": len(tasks),
        "answered": len(answered),
        "top_file_changed": top,
        "top_file_changed_share_of_tasks": round(top / len(tasks), 3) if tasks else None,
        "top_file_changed_share_of_answered": round(top / len(answered), 3) if answered else None,
        "any_file_changed": any_hit,
        "top_file_changed_and_touched_before": useful,  # ... and past fixes touched it: it can bring a hit
        "tasks_with_a_changed_file_touched_before": sum(1 for t in tasks if t.changed & t.touched),
    }


def latency(tasks: Sequence[Task], weights: LocalizeWeights) -> dict[str, Any]:
    """``localize()`` per task, in milliseconds: over the restricted index (now) and the full one (built)."""
    now = []
    for task in tasks:
        start = time.perf_counter()
        localize(task.asked.text, task.index, weights=weights)
        now.append((time.perf_counter() - start) * 1000)
    built = [t.build_seconds * 1000 for t in tasks]
    return {"restricted_index_ms": _quantiles(now), "full_index_ms_at_build": _quantiles(built)}


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {
        "median": round(statistics.median(ordered), 3),
        "p99": round(p99, 3),
        "max": round(ordered[-1], 3),
    }


def report(
    split_tasks: dict[str, list[Task]],
    choice: dict[str, float],
    alternative: dict[str, float],
    prior: dict[str, float],
) -> dict[str, Any]:
    """Per half, each system's tally, the localizer's accuracy (without and with the history prior) and
    latency, and the goal's check."""
    ranking, loc = split_weights(choice)
    out: dict[str, Any] = {}
    for split, tasks in split_tasks.items():
        found = located(tasks, loc)
        cells = {
            system: tally(tasks, [answer(t, system, ranking, f) for t, f in zip(tasks, found, strict=True)])
            for system in SYSTEMS
            if system not in ("workspace_most_hits", "workspace_prior")
        }
        cells["workspace_most_hits"] = _workspace(tasks, alternative)
        cells["workspace_prior"] = _workspace(tasks, prior, with_prior=True)
        ws, mid = cells["workspace"], cells["mid_task"]
        out[split] = {
            "systems": {name: cell.as_dict() for name, cell in cells.items()},
            "localizer": accuracy(tasks, found),
            "localizer_with_prior": accuracy(tasks, located(tasks, split_weights(prior)[1], prior=True)),
            "latency": latency(tasks, loc),
            "goal": {
                "hits_needed": round(GOAL_SHARE * mid.hit_fn, 2),
                "hits": ws.hit_fn,
                "share_of_mid_task": round(ws.hit_fn / mid.hit_fn, 3) if mid.hit_fn else None,
                "precision": ws.as_dict()["precision"],
                "met": ws.hit_fn >= GOAL_SHARE * mid.hit_fn
                and (ws.as_dict()["precision"] or 0) >= GOAL_PRECISION,
            },
        }
    return out


def _workspace(tasks: Sequence[Task], point: dict[str, float], with_prior: bool = False) -> Tally:
    """Workspace mode's tally at grid ``point`` (``with_prior``: the localizer given the history prior)."""
    ranking, loc = split_weights(point)
    found = located(tasks, loc, prior=with_prior)
    return tally(tasks, [answer(t, "workspace", ranking, f) for t, f in zip(tasks, found, strict=True)])


def build(git_dir: Path, name: str | None, data_dir: Path = DATA_DIR) -> Path:
    """Derive and write one repository's workspace data (by hand: needs the full history)."""
    repo = chosen_repo(git_dir, name, load_repos(data_dir))
    path = data_path(data_dir, repo.name)
    write(derive(repo, git_dir), path)
    return path


TABLE_ROWS = (
    ("text_only", "text only (shipped recall)"),
    ("workspace", "workspace mode (text + localized files), shipped"),
    ("workspace_most_hits", "workspace mode at the tuning half's most hits (not shipped)"),
    ("workspace_prior", "workspace mode, the localizer given the history prior (tuned)"),
    ("one_file_bound", f"bound: workspace mode given one changed file past fixes touched, at {BOUND_WEIGHT}"),
    ("mid_task", "mid-task (text + the files changed)"),
    ("bm25", "BM25"),
)


def table(result: dict[str, Any]) -> str:
    """The markdown table of both halves (held-out first)."""
    lines = [
        "| half | system | same-function hits in top 5 | precision | quiet |",
        "|---|---|---|---|---|",
    ]
    for split in ("held_out", "tune"):
        for key, label in TABLE_ROWS:
            t = result["report"][split]["systems"][key]
            lines.append(
                f"| {split.replace('_', '-')} | {label} | {t['hit_fn']}/{t['with_fn']} | {t['precision']} "
                f"({t['returned_per_query']} per task) | {t['quiet']}/{t['unrelated']} |"
            )
    return "\n".join(lines)


BEGIN, END = "<!-- workspace:begin -->", "<!-- workspace:end -->"
DOCS = HERE.parent.parent / "docs" / "evaluation.md"


def render(result: dict[str, Any]) -> str:
    """docs/evaluation.md's workspace section: the table, the localizer, the latency, the goal."""
    held, tune = result["report"]["held_out"], result["report"]["tune"]
    lines = [
        f"Generated by `python -m evals.related.workspace --write` from `evals/related/results/{RESULT.name}`"
        f" ({result['tasks']['tune']} tuning and {result['tasks']['held_out']} held-out task-start queries;"
        f" knobs chosen on the tuning half: {_knobs(result['choice'])}).",
        "",
        table(result),
        "",
        f"History prior (the localizer told which files past fixes touched; chosen on the tuning half:"
        f" {_knobs(result['prior_point'])}):"
        f" {'beats' if result['prior_beats_shipped_on_tuning'] else 'does not beat'} the shipped point on"
        f" the tuning half, so it is {'' if result['prior_beats_shipped_on_tuning'] else 'not '}shipped.",
        "",
    ]
    for name, half in (("held-out", held), ("tune", tune)):
        acc, lat, goal = half["localizer"], half["latency"], half["goal"]
        lines.append(
            f"- {name}: the localizer answered {acc['answered']}/{acc['tasks']} tasks; its top file was one"
            f" the commit changed in {acc['top_file_changed']}"
            f" ({acc['top_file_changed_share_of_tasks']} of all tasks; one past fixes had touched too:"
            f" {acc['top_file_changed_and_touched_before']}, with the history prior"
            f" {half['localizer_with_prior']['top_file_changed_and_touched_before']}, of the"
            f" {acc['tasks_with_a_changed_file_touched_before']} tasks where one could); `localize()` median"
            f" {lat['restricted_index_ms']['median']} ms, p99"
            f" {lat['restricted_index_ms']['p99']} ms (full index at build: median"
            f" {lat['full_index_ms_at_build']['median']} ms, p99 {lat['full_index_ms_at_build']['p99']} ms)."
            f" Goal (hits >= {GOAL_SHARE:.0%} of mid-task's = {goal['hits_needed']} at precision >="
            f" {GOAL_PRECISION}): {goal['hits']} hits ({goal['share_of_mid_task']} of mid-task's) at"
            f" {goal['precision']}: {'met' if goal['met'] else 'not met'}."
        )
    return "\n".join(lines)


def _knobs(point: dict[str, float]) -> str:
    return ", ".join(f"`{k}` {v:g}" for k, v in sorted(point.items()))


def write_docs(result: dict[str, Any], docs: Path = DOCS) -> None:
    write_section(docs, BEGIN, END, render(result))


def evaluate(repos: Sequence[Repo], data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """Tune on the tuning half, report both halves (module docstring)."""
    split_tasks = {split: load_tasks(repos, split, data_dir) for split in ("tune", "held_out")}
    rows = search(split_tasks["tune"])
    choice, alternative = rows[0]["point"], most_hits(rows)
    prior_rows = sorted((r for u in UNTOUCHED for r in search(split_tasks["tune"], u)), key=rank_key)
    shipped = {
        "min_weight": LOCALIZE_DEFAULTS.min_weight,
        **{k: getattr(DEFAULT_WEIGHTS, k) for k in choice if k.startswith("localized_")},
    }
    return {
        "k": K,
        "repos": [r.name for r in repos if data_path(data_dir, r.name).exists()],
        "tasks": {split: len(tasks) for split, tasks in split_tasks.items()},
        "choice": choice,
        "shipped_defaults": shipped,
        "shipped_defaults_are_the_choice": shipped == choice
        and DEFAULT_WEIGHTS.localized_min_weight == choice["min_weight"],
        "most_hits_point": alternative,
        "tuning_grid_top": rows[:10],
        "prior_point": prior_rows[0]["point"],
        "prior_beats_shipped_on_tuning": rank_key(prior_rows[0]) < rank_key(rows[0]),
        "prior_grid_top": prior_rows[:10],
        "report": report(split_tasks, choice, alternative, prior_rows[0]["point"]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.related.workspace", description=__doc__.splitlines()[0]
    )
    build_arguments(parser, "data")
    parser.add_argument(
        "--write", action="store_true", help=f"write {RESULT.name} and docs/evaluation.md's table"
    )
    parser.add_argument(
        "--readme", action="store_true", help=f"only rewrite the docs table from {RESULT.name}"
    )
    args = parser.parse_args(argv)
    if args.readme:
        write_docs(json.loads(RESULT.read_text()))
        return 0
    if built(parser, args, build):
        return 0
    result = evaluate(load_repos())
    sys.stdout.write(table(result) + "\n")
    sys.stdout.write(json.dumps({s: r["goal"] for s, r in result["report"].items()}, indent=1) + "\n")
    if args.write:
        RESULT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        write_docs(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
