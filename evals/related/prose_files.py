"""``python -m evals.related.prose_files``: can a meaning signal find the files a prose task is about?
(issue 32, decision 0072)

Workspace mode's limit is the localizer (decision 0071): given one changed file that past fixes touched,
recall reaches the goal, but the localizer puts such a file first in few tasks, and the rest name
nothing in the checkout. This script ranks each task's *candidate files* (the files past fixes touched
that exist in its workspace, the first parent's tree: only those can bring a past fix back) by meaning,
with the static embeddings of ``store.meaning`` (``wordllama``; the ``meaning`` extra):

- ``fixes_max`` / ``fixes_top2``: the cosine of the task text with the requests of the past fixes that
  touched the file (the best one; the mean of the best two, 0.9 x the best when only one did);
- ``profile`` / ``path``: the cosine with a profile of the file in the checkout: its path split into
  words (twice) and the words of the names it defines (``store.localize.facts``, at most
  ``PROFILE_WORDS``), or the path's words alone;
- ``localizer``: the shipped localizer's weight (``min_weight`` 0, so every candidate it saw counts);
- ``combined``: a per-task softmax over the candidates of a linear score of all of the above (and
  whether the localizer named the file), fitted on the TUNING half only (``fit``); its probability
  of the top file is its confidence.

Judged first by the bound's measure: how often the top file is one the commit changed that past fixes
touched, and how right the most confident tops are. Then in workspace mode (``evals.related.workspace``'s
replay, shipped recall knobs): the combined ranking's top ``k`` files enter recall at a weight when their
probability reaches ``p_min``, added to the localizer's files (``add``) or in place of them when the
localizer trusted none (``replace_unsure``); the point is chosen on the tuning half by workspace's rule
(most hits at precision >= 0.8, else most hits; the point without meaning is in the grid), then both
halves are reported, with two ceilings (``oracle``: the top 1 or 3 files given, at 0.8 and alone, only
when they are right).

Run by hand: it needs the extra and the four histories (``fetch`` puts them under ``--mirrors``, as
``owner+name/repo``), since it reads each workspace's candidate files from the parent's tree::

    python -m evals.related.prose_files --write    # also results/prose_files.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evals.related.checkout import GitTrees
from evals.related.core import Repo, load_repos
from evals.related.workspace import GOAL_PRECISION, Task, answer, load_tasks, rank_key, split_weights, tally
from evals.related.workspace import GRID as RECALL_GRID
from store import DEFAULT_WEIGHTS
from store.localize import Localized, localize
from store.localize.resolve import DEFAULT_WEIGHTS as LOCALIZE_DEFAULTS

HERE = Path(__file__).parent
RESULT = HERE / "results" / "prose_files.json"
MIRRORS = Path("/work/.mirror")
FEATURES = ("localizer", "localized", "fixes_max", "fixes_top2", "profile", "path")
RANKERS = ("shipped_localizer", "localizer", "fixes_max", "fixes_top2", "profile", "path", "combined")
PROFILE_WORDS = 100
TOP = 3  # candidates kept per task for the workspace grid
CONFIDENT = (20, 40, 80)
ORACLE_WEIGHT = 0.8
RETUNED = 3  # meaning points whose recall knobs are searched again: the most precise that gain hits
# ... over workspace's grid at the shipped ``min_weight``, and with a gentler file mass too
_SHIPPED_MIN = [k for k in RECALL_GRID if k["min_weight"] == LOCALIZE_DEFAULTS.min_weight]
KNOBS = _SHIPPED_MIN + [{**k, "localized_files": 1.5} for k in _SHIPPED_MIN if k["localized_files"] == 3.0]
Floats = npt.NDArray[np.float64]
Embed = Callable[[list[str]], npt.NDArray[np.float32]]
Point = dict[str, Any]
BASE: Point = {"mode": "none"}
GRID: list[Point] = [BASE] + [
    {"mode": mode, "k": k, "weight": w, "p_min": p}
    for mode in ("add", "replace_unsure")
    for k in (1, 3)
    for w in (0.55, 0.65, 0.8)
    for p in (0.0, 0.2, 0.4)
]


def words(name: str) -> list[str]:
    """The lower-case words of an identifier or a path (camelCase, snake_case, separators; no numbers)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+|_", spaced) if w and not w.isdigit()]


def path_text(path: str) -> str:
    """A path's words, without its extension."""
    return " ".join(words(re.sub(r"\.[A-Za-z0-9]+$", "", path)))


def profile_text(path: str, defs: Sequence[str], limit: int = PROFILE_WORDS) -> str:
    """A file's profile: its path's words twice, then the distinct words of the names it defines (the
    last part of a dotted name), at most ``limit`` of them."""
    seen: dict[str, None] = {}
    for name in defs:
        for word in words(name.rsplit(".", 1)[-1]):
            seen[word] = None
    return " ".join([path_text(path), path_text(path), *list(seen)[:limit]]).strip()


def per_file(cosines: Sequence[float], file_sets: Sequence[Sequence[str]]) -> dict[str, tuple[float, float]]:
    """Per file, ``(best, top2)`` of the cosines of the fixes that touched it: the best one, and the mean
    of the best two (0.9 x the best when only one did)."""
    by_file: dict[str, list[float]] = defaultdict(list)
    for cosine, files in zip(cosines, file_sets, strict=True):
        for path in files:
            by_file[path].append(float(cosine))
    out = {}
    for path, values in by_file.items():
        best = sorted(values, reverse=True)
        out[path] = (best[0], (best[0] + best[1]) / 2 if len(best) > 1 else 0.9 * best[0])
    return out


def softmax(scores: Floats) -> Floats:
    shifted = np.exp(scores - scores.max())
    out: Floats = shifted / shifted.sum()
    return out


def fit(groups: Sequence[tuple[Floats, npt.NDArray[np.bool_]]], l2: float = 0.01, steps: int = 800) -> Floats:
    """Weights of a linear score whose softmax over each group's rows puts the most probability on its
    right rows (gradient ascent on the mean log-likelihood, L2 ``l2``); groups with no right row teach
    nothing. Pure and deterministic."""
    usable = [(x, y / y.sum()) for x, y in groups if len(y) and y.any()]
    if not usable:
        return np.zeros(len(FEATURES))
    w = np.zeros(usable[0][0].shape[1])
    for _ in range(steps):
        grad = sum((x.T @ (target - softmax(x @ w)) for x, target in usable), np.zeros_like(w))
        w = w + grad / len(usable) - l2 * w
    return w


def confident(tops: Sequence[tuple[float, bool]], sizes: Sequence[int] = CONFIDENT) -> dict[str, int]:
    """Of the ``n`` tasks whose top file is most confident, how many tops are right, per ``n``."""
    ordered = sorted(tops, key=lambda t: -t[0])
    return {str(n): sum(ok for _, ok in ordered[:n]) for n in sizes if n <= len(ordered)}


def files_for(
    located: Sequence[Localized], ranked: Sequence[tuple[str, float]], point: Point
) -> tuple[Localized, ...]:
    """What recall is given at grid ``point``: the ranked candidates ``(path, probability)`` of at least
    ``p_min``, their top ``k`` at ``weight``, added to the localizer's files (``add``) or given instead
    of them when it trusted none (``replace_unsure``; else its files alone)."""
    own = tuple(located)
    if point["mode"] == "none":
        return own
    extra = [
        Localized(p, point["weight"], "meaning") for p, prob in ranked[: point["k"]] if prob >= point["p_min"]
    ]
    if point["mode"] == "replace_unsure":
        sure = any(f.weight >= DEFAULT_WEIGHTS.localized_trust for f in own)
        return own if sure or not extra else tuple(extra)
    have = {f.path for f in own}
    return own + tuple(f for f in extra if f.path not in have)


@dataclass(frozen=True)
class Candidates:
    """One task's candidate files, their features (rows in ``FEATURES`` order), and which are right."""

    task: Task
    located: tuple[Localized, ...]  # the shipped localizer's answer
    paths: tuple[str, ...]
    x: Floats
    right: npt.NDArray[np.bool_]  # changed by the commit and touched by past fixes


class Embedder:
    """Unit vectors of texts, each computed once."""

    def __init__(self, embed: Embed) -> None:
        self._embed, self._cache = embed, {}  # type: ignore[var-annotated]

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        for start in range(0, len(missing), 512):
            chunk = missing[start : start + 512]
            self._cache.update(zip(chunk, np.nan_to_num(self._embed(chunk)), strict=True))
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)


def candidates(task: Task, defs: Mapping[str, Sequence[str]], embed: Embedder) -> Candidates:
    """The task's candidate files (touched by past fixes, present in its workspace) with their features."""
    low = localize(task.asked.text, task.index, weights=replace(LOCALIZE_DEFAULTS, min_weight=0.0))
    shipped = tuple(f for f in low if f.weight >= LOCALIZE_DEFAULTS.min_weight)
    view = task.view
    fixes = per_file(
        embed([e.task for e in view.entries]) @ embed([task.asked.text])[0] if view.entries else [],
        [sorted(s) for s in view.file_sets or []],
    )
    paths = tuple(sorted(p for p in fixes if p in defs))
    if not paths:
        return Candidates(task, shipped, (), np.zeros((0, len(FEATURES))), np.zeros(0, bool))
    query = embed([task.asked.text])[0]
    profile = embed([profile_text(p, defs[p]) for p in paths]) @ query
    path = embed([path_text(p) for p in paths]) @ query
    weight = {f.path: f.weight for f in low}
    x = np.array(
        [
            [weight.get(p, 0.0), float(p in weight), *fixes[p], profile[i], path[i]]
            for i, p in enumerate(paths)
        ]
    )
    right = np.array([p in task.changed & task.touched for p in paths])
    return Candidates(task, shipped, paths, x, right)


def checkout_defs(repo: Repo, tasks: Sequence[Task], mirrors: Path) -> dict[str, dict[str, tuple[str, ...]]]:
    """Per task sha, the names each candidate file (touched by past fixes) defines in the parent's tree."""
    trees = GitTrees(mirrors / repo.name.replace("/", "+") / "repo")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    try:
        for task in tasks:
            tree = dict(trees.tree(trees.first_parent(task.asked.sha)))
            out[task.asked.sha] = {p: trees.facts_of(p, tree[p]).defs for p in task.touched if p in tree}
    finally:
        trees.close()
    return out


def load(repos: Sequence[Repo], mirrors: Path, embed: Embedder) -> dict[str, list[Candidates]]:
    """Every ``start`` task of each half with its candidates (reads the histories under ``mirrors``)."""
    owner = {c.sha: r for r in repos for c in r.commits}
    out: dict[str, list[Candidates]] = {}
    for split in ("tune", "held_out"):
        tasks = load_tasks(repos, split)
        defs: dict[str, dict[str, tuple[str, ...]]] = {}
        for repo in repos:
            defs.update(checkout_defs(repo, [t for t in tasks if owner[t.asked.sha] is repo], mirrors))
        out[split] = [candidates(t, defs[t.asked.sha], embed) for t in tasks]
    return out


def ranked(c: Candidates, ranker: str, w: Floats) -> list[tuple[str, float]]:
    """The candidates best first with their score (``combined``: the softmax probability)."""
    if not c.paths:
        return []
    score = softmax(c.x @ w) if ranker == "combined" else c.x[:, FEATURES.index(ranker)]
    order = np.argsort(-score, kind="stable")
    return [(c.paths[i], float(score[i])) for i in order]


def accuracy(tasks: Sequence[Candidates], ranker: str, w: Floats) -> dict[str, Any]:
    """The bound's measure for one ranker: tasks whose top candidate is right, and of the most confident."""
    tops = []
    for c in tasks:
        if ranker == "shipped_localizer":  # its own answer, over every file of the checkout
            best = [(f.path, f.weight) for f in c.located[:1]]
        else:
            best = ranked(c, ranker, w)[:1]
        if best and not (ranker == "localizer" and best[0][1] == 0):
            tops.append((best[0][1], best[0][0] in c.task.changed & c.task.touched))
    return {
        "tasks": len(tasks),
        "with_a_right_candidate": sum(1 for c in tasks if c.right.any()),
        "answered": len(tops),
        "top_right": sum(ok for _, ok in tops),
        "most_confident_right": confident(tops),
    }


def workspace(tasks: Sequence[Candidates], point: Point, w: Floats) -> dict[str, Any]:
    """Workspace mode's tally at grid ``point`` (``oracle``: the right ones of the top ``k``, alone;
    ``knobs``: recall's, else the shipped ones)."""
    weights = split_weights(point["knobs"])[0] if "knobs" in point else DEFAULT_WEIGHTS
    answers = []
    for c in tasks:
        top = ranked(c, "combined", w)[:TOP]
        if point.get("oracle"):
            right = [
                Localized(p, ORACLE_WEIGHT, "oracle") for p, _ in top[: point["k"]] if p in c.task.changed
            ]
            files = tuple(right) or c.located
        else:
            files = files_for(c.located, top, point)
        answers.append(answer(c.task, "workspace", weights, files))
    return {"point": point, **tally([c.task for c in tasks], answers).as_dict()}


def rows_base(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The grid's row without meaning."""
    return next(r for r in rows if r["point"] == BASE)


def retune(tasks: Sequence[Candidates], point: Point, w: Floats) -> dict[str, Any]:
    """Recall's ``localized_*`` knobs searched again (``KNOBS``) on the tuning half for the files of
    ``point``: its best row by workspace's rule, and its most hits."""
    rows = sorted((workspace(tasks, {**point, "knobs": knobs}, w) for knobs in KNOBS), key=rank_key)
    most = max(rows, key=lambda r: (r["hit_fn"], r["precision"] or 0.0, r["quiet"]))
    return {"point": point, "best": rows[0], "most_hits": most}


def evaluate(halves: Mapping[str, Sequence[Candidates]]) -> dict[str, Any]:
    """Fit ``combined`` and choose the grid point on the tuning half; report both halves."""
    w = fit([(c.x, c.right) for c in halves["tune"]])
    rows = sorted((workspace(halves["tune"], p, w) for p in GRID), key=rank_key)
    gaining = [r for r in rows if r["point"] != BASE and r["hit_fn"] > rows_base(rows)["hit_fn"]]
    again = [BASE] + [r["point"] for r in sorted(gaining, key=lambda r: -(r["precision"] or 0.0))[:RETUNED]]
    retuned = [retune(halves["tune"], p, w) for p in again]
    choice = sorted([*rows, *(r["best"] for r in retuned)], key=rank_key)[0]["point"]
    most = max(rows, key=lambda r: (r["hit_fn"], r["precision"] or 0.0, r["quiet"]))["point"]
    report = {}
    for split, tasks in halves.items():
        report[split] = {
            "rankers": {r: accuracy(tasks, r, w) for r in RANKERS},
            "workspace": {
                "without_meaning": workspace(tasks, BASE, w),
                "without_meaning_knobs_searched_again": workspace(tasks, retuned[0]["best"]["point"], w),
                "chosen": workspace(tasks, choice, w),
                "most_hits": workspace(tasks, most, w),
                "oracle_top1": workspace(tasks, {"oracle": True, "k": 1}, w),
                "oracle_top3": workspace(tasks, {"oracle": True, "k": 3}, w),
            },
        }
    return {
        "features": list(FEATURES),
        "combined_weights": [round(float(v), 4) for v in w],
        "choice": choice,
        "choice_uses_meaning": choice["mode"] != "none",
        "knobs_searched": KNOBS,
        "most_hits_point": most,
        "goal_precision": GOAL_PRECISION,
        "tuning_grid_top": rows[:10],
        "retuned": retuned,
        "tasks": {split: len(tasks) for split, tasks in halves.items()},
        "report": report,
    }


def table(result: Mapping[str, Any]) -> str:
    """Both halves: each ranker's right top files, then workspace mode's rows."""
    lines = ["| half | ranker | top file right | of the 20 / 40 / 80 most confident |", "|---|---|---|---|"]
    for split in ("tune", "held_out"):
        for name, a in result["report"][split]["rankers"].items():
            most = " / ".join(str(v) for v in a["most_confident_right"].values())
            lines.append(f"| {split} | {name} | {a['top_right']}/{a['with_a_right_candidate']} | {most} |")
    lines += [
        "",
        "| half | workspace mode | same-function hits | precision | quiet |",
        "|---|---|---|---|---|",
    ]
    for split in ("tune", "held_out"):
        for name, t in result["report"][split]["workspace"].items():
            lines.append(
                f"| {split} | {name} | {t['hit_fn']}/{t['with_fn']} | {t['precision']} |"
                f" {t['quiet']}/{t['unrelated']} |"
            )
    for again in result["retuned"]:
        point = ", ".join(f"{k} {v}" for k, v in sorted(again["point"].items()))
        for name in ("best", "most_hits"):
            t = again[name]
            lines.append(
                f"| tune | {point}, recall knobs searched again: {name} | {t['hit_fn']}/{t['with_fn']} |"
                f" {t['precision']} | {t['quiet']}/{t['unrelated']} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.related.prose_files", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="where owner+name/repo git dirs are")
    parser.add_argument("--write", action="store_true", help=f"write results/{RESULT.name}")
    args = parser.parse_args(argv)
    from store.meaning import wordllama_embed  # noqa: PLC0415 - the optional extra

    result = evaluate(load(load_repos(), args.mirrors, Embedder(wordllama_embed())))
    sys.stdout.write(table(result) + "\n")
    if args.write:
        RESULT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
