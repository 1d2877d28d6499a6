"""``python -m evals.related.by_query``: could a *query-dependent* learner tell, at task start, which
answers are wrong from how the fix was used before?

``python -m evals.related.from_use`` showed that a rule on a fix's own use cannot gain much: most wrong
answers of the later half are fixes never shown before or fixes an earlier task *did* follow. A fix
followed by earlier tasks may be related to tasks like those and not to every task. This analysis measures
how well the current task's resemblance to a fix's *followers* (earlier tasks shown it that followed it)
and to its *ignorers* (shown it, did not) separates related from unrelated answers.

The learning-off replay of ``from_use`` (the same store, the same simulated agent) gives each task-start
answer; for every returned fix that was shown before, the features of the task against its followers and
ignorers (each the best over them):

- ``words``: Jaccard of the word sets (``core.words``): plain word overlap;
- ``identifiers``: Jaccard of the code identifiers, paths and file names the texts name, and their parts;
- ``prefix``: how many of them share the task's title component (``gopls/internal/server:``,
  ``fix(@angular/build):``, ``[mypyc]``);
- ``strength``: the store's own strength of the follower's (ignorer's) entry for the task text — the
  relevance recall ranks by (words, paths, code keys), computed on a view of the entries before the task.

Printed and written (``--write``: ``results/by_query.json``): per half of the tasks (first: tuning, later:
reported) the ROC AUC of each feature and of followers minus ignorers between related and unrelated
answers, by prior use (``followed_before``, ``never_followed``); and the precision a *drop* rule would
gain — leave out every answer whose followers-minus-ignorers score is under a threshold — with the
threshold chosen on the first half (same-file hits within 5% there) and then applied to the later half,
beside the same for the per-fix rule of ``from_use.per_fix_bound`` chosen the same way, and what a
perfect learner from use would gain. Dropping ignores the feedback (a dropped fix is not shown again),
so these are optimistic; the real replay with the shipped rule is ``from_use``'s. Last, a kNN over past
(task -> followed fixes): the fixes that the 1, 3 or 5 earlier tasks of highest strength for this task
followed, taken as extra answers, with their precision beside the answers' own.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evals.related.core import OWNER, Repo, load_repos, words
from evals.related.from_use import ROTATION_CAP, replay
from store import DEFAULT_WEIGHTS, FixEntry, FixStore
from store.recall.ranking import strength
from store.recall.view import ProjectView, query_terms

RESULTS = Path(__file__).parent / "results" / "by_query.json"
FEATURES = ("words", "identifiers", "prefix", "strength")
_CODE = re.compile(
    r"`[^`\n]+`|\b[A-Za-z_]\w*\(\)|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b"
    r"|\b[\w.-]+(?:/[\w.-]+)+|\b\w+\.(?:py|rs|go|ts|js|toml|json|md)\b|\b[a-z_]\w*\.[a-z_]\w*\b"
)
_PREFIX = re.compile(r"^\s*(?:\[([^\]]+)\]|\w+\(([^)]+)\)!?:|([\w./@-]+(?:,\s*[\w./@-]+)*):)")


def identifiers(text: str) -> frozenset[str]:
    """The code identifiers, paths and file names ``text`` names, lower-cased, with their parts."""
    out: set[str] = set()
    for found in _CODE.findall(text):
        name = found.strip("`").lower()
        out.add(name)
        out.update(part for part in re.split(r"[/.:()\s]+", name) if len(part) > 2)
    return frozenset(out)


def prefix(title: str) -> str | None:
    """The component a title starts with (``gopls/internal/server``, ``@angular/build``, ``mypyc``)."""
    m = _PREFIX.match(title)
    return None if m is None else next(g for g in m.groups() if g is not None).strip().lower()


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@dataclass(frozen=True)
class Answer:
    """One returned fix of a task-start query: its half, whether it is related (same file), what the
    agent had done with it before, and each feature against its followers and its ignorers."""

    later: bool
    related: bool
    prior: str  # new, never_followed, followed_before
    followers: dict[str, float]
    ignorers: dict[str, float]
    shown_before: int
    followed_before: int
    query: tuple[str, int]  # (repository, task position)


def answers(
    repo: Repo, records: Sequence[dict[str, Any]], entries: Sequence[FixEntry], knn: dict[str, list[int]]
) -> Iterator[Answer]:
    """Every returned fix of ``records`` (one repository's learning-off replay) as an ``Answer``; adds
    to ``knn`` what the nearest earlier tasks followed (``_neighbours``)."""
    commits = {c.sha[:10]: c for c in repo.commits}
    followed_by: dict[str, list[str]] = {}  # task -> the fixes it followed
    position = {c.sha: i for i, c in enumerate(repo.commits)}
    history: dict[str, list[tuple[bool, str]]] = {}
    view = ProjectView([])
    for n, record in enumerate(records):
        task = commits[record["sha"]]
        before = [e for e in entries if position.get(e.event_id or "", 10**9) < position[task.sha]]
        view = view.extend(before[len(view.entries) :])
        sig = view.signals(query_terms(task.text, []), files=[], errors=[], workspace=None,
                           weights=DEFAULT_WEIGHTS)  # fmt: skip
        value = strength(sig, DEFAULT_WEIGHTS)
        of = {(e.event_id or "?")[:10]: float(value[i]) for i, e in enumerate(view.entries)}
        gold = set(record["same_file"])
        for sha in record["returned"]:
            past = history.get(sha, [])
            groups = ([commits[t] for f, t in past if f], [commits[t] for f, t in past if not f])
            feats = [_features(task, group, of) for group in groups]
            followed = len(groups[0])
            prior = "new" if not past else "followed_before" if followed else "never_followed"
            yield Answer(n >= len(records) // 2, sha in gold, prior, feats[0], feats[1], len(past), followed,
                         (repo.name, n))  # fmt: skip
        _neighbours(knn, n >= len(records) // 2, record, of, followed_by)
        for sha in record["returned"]:
            history.setdefault(sha, []).append((sha in gold, record["sha"]))
        followed_by[record["sha"]] = [sha for sha in record["returned"] if sha in gold]


NEIGHBOURS = (1, 3, 5)


def _neighbours(
    knn: dict[str, list[int]],
    later: bool,
    record: dict[str, Any],
    strength_of: dict[str, float],
    followed_by: dict[str, list[str]],
) -> None:
    """A kNN over past (task -> followed fixes): the fixes the ``k`` earlier tasks of highest strength for
    this task followed, as extra answers. Adds to ``knn["<half> k<k>"]``: [candidates, related, not
    returned already, related among those]."""
    gold, returned = set(record["same_file"]), set(record["returned"])
    near = sorted((strength_of.get(t, 0.0), t) for t in followed_by if strength_of.get(t, 0.0) > 0)
    for k in NEIGHBOURS:
        found = {sha for _, t in near[-k:] for sha in followed_by[t]}
        extra = found - returned
        cell = knn.setdefault(f"{'later' if later else 'first'} k{k}", [0, 0, 0, 0])
        for i, n in enumerate((len(found), len(found & gold), len(extra), len(extra & gold))):
            cell[i] += n


def _features(task: Any, group: Sequence[Any], strength_of: dict[str, float]) -> dict[str, float]:
    qw, qi, qp = words(task.text), identifiers(task.text), prefix(task.title)
    return {
        "words": max((jaccard(qw, words(t.text)) for t in group), default=0.0),
        "identifiers": max((jaccard(qi, identifiers(t.text)) for t in group), default=0.0),
        "prefix": float(sum(qp is not None and prefix(t.title) == qp for t in group)),
        "strength": max((strength_of.get(t.sha[:10], 0.0) for t in group), default=0.0),
    }


def auc(scores: Sequence[tuple[float, bool]]) -> float | None:
    """ROC AUC of ``scores`` (score, related): the chance a related answer scores above an unrelated one."""
    pos = np.array([s for s, r in scores if r])
    neg = np.array([s for s, r in scores if not r])
    if not pos.size or not neg.size:
        return None
    above = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return round(float(above) / (pos.size * neg.size), 3)


def separation(found: Sequence[Answer]) -> dict[str, Any]:
    """Per half and prior use: the answers, related ones, and the AUC of each feature."""
    out: dict[str, Any] = {}
    for half, later in (("first", False), ("later", True)):
        for prior in ("followed_before", "never_followed"):
            rows = [a for a in found if a.later == later and a.prior == prior]
            cell: dict[str, Any] = {"answers": len(rows), "related": sum(a.related for a in rows)}
            for f in FEATURES:
                cell[f"{f}_followers"] = auc([(a.followers[f], a.related) for a in rows])
                cell[f"{f}_ignorers"] = auc([(a.ignorers[f], a.related) for a in rows])
                cell[f"{f}_difference"] = auc([(a.followers[f] - a.ignorers[f], a.related) for a in rows])
            out.setdefault(half, {})[prior] = cell
    return out


def dropping(found: Sequence[Answer], later: bool, keep: Callable[[Answer], bool]) -> tuple[float, int, int]:
    """(precision, same-file hits, returned) of one half's answers with those ``keep`` refuses left out.
    A task hits when a kept answer is related (tasks with no answer change nothing)."""
    rows = [a for a in found if a.later == later]
    kept = [a for a in rows if keep(a)]
    hits = {a.query for a in kept if a.related}
    return (sum(a.related for a in kept) / len(kept) if kept else 0.0), len(hits), len(kept)


def rules() -> Iterator[tuple[dict[str, Any], Callable[[Answer], bool]]]:
    """The drop rules compared: a fix's own use (``from_use.per_fix_bound``'s grid) and, per feature,
    followers minus ignorers under a threshold (over the query's own scale for ``strength``: the best
    strength among the task's answers is not kept, so the raw difference is used)."""
    for min_shown in (1, 2, 3, 4):
        for below in (0.01, 0.2, 0.34, 0.5, 0.67):
            setting = {"rule": "own use", "min_shown": min_shown, "below_rate": below}
            yield setting, functools.partial(_own_use, min_shown=min_shown, below=below)
    for f in FEATURES:
        for t in (-1.0, -0.5, -0.3, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2):
            yield {"rule": f, "threshold": t}, functools.partial(_by_query, feature=f, threshold=t)


def _own_use(a: Answer, *, min_shown: int, below: float) -> bool:
    return a.shown_before < min_shown or a.followed_before >= below * a.shown_before


def _by_query(a: Answer, *, feature: str, threshold: float) -> bool:
    return a.prior == "new" or a.followers[feature] - a.ignorers[feature] >= threshold


def _kept(a: Answer, *, dropped: tuple[str, ...]) -> bool:
    return a.related or a.prior not in dropped


def best_rules(found: Sequence[Answer]) -> dict[str, Any]:
    """Per rule family, the setting of best first-half precision with first-half hits within 5%, and
    what it gives on the later half."""
    base = {half: dropping(found, half == "later", lambda a: True) for half in ("first", "later")}
    best: dict[str, dict[str, Any]] = {}
    for setting, keep in rules():
        tune = dropping(found, False, keep)
        if tune[1] < 0.95 * base["first"][1]:
            continue
        gain = (tune[0] - base["first"][0]) / base["first"][0]
        family = setting["rule"]
        if family not in best or gain > best[family]["first_precision_gain"]:
            later = dropping(found, True, keep)
            best[family] = {
                **setting,
                "first_precision_gain": round(gain, 4),
                "first_hits": f"{tune[1]}/{base['first'][1]}",
                "later_precision_gain": round((later[0] - base["later"][0]) / base["later"][0], 4),
                "later_hits": f"{later[1]}/{base['later'][1]}",
                "later_hit_change": round((later[1] - base["later"][1]) / base["later"][1], 4),
                "later_returned": f"{later[2]}/{base['later'][2]}",
            }
    return best


def evaluate(repos: Sequence[Repo]) -> dict[str, Any]:
    """The learning-off replay of every repository, its answers, their separation and the drop rules."""
    found: list[Answer] = []
    knn: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="fixmem-eval-by-query-") as tmp:
        for repo in repos:
            workdir = Path(tmp) / repo.name.replace("/", "__")
            records = replay(repo, workdir, learn=False)
            store = FixStore(workdir, cap=ROTATION_CAP, learn_from_use=False)
            found += answers(repo, records, store.read(OWNER, repo.project_key).entries, knn)
    counts = {
        half: {p: sum(1 for a in found if a.later == later and a.prior == p and not a.related)
               for p in ("new", "never_followed", "followed_before")}
        for half, later in (("first", False), ("later", True))
    }  # fmt: skip
    return {
        "unrelated_by_prior_use": counts,
        "auc": separation(found),
        "drop_rules": best_rules(found),
        "perfect_history": perfect(found),
        "neighbours": {
            key: {"candidates": c, "precision": round(r / c, 3) if c else None, "not_returned": x,
                  "not_returned_precision": round(xr / x, 3) if x else None}
            for key, (c, r, x, xr) in sorted(knn.items())
        },
        "answers_precision": {
            half: round(dropping(found, half == "later", lambda a: True)[0], 3) for half in ("first", "later")
        },
    }  # fmt: skip


def perfect(found: Sequence[Answer]) -> dict[str, float]:
    """The later half's precision gain if every unrelated answer shown before were dropped (a perfect
    learner from use, whatever its signal; hits cannot fall), and if only those an earlier task followed
    were: the most any query-dependent rule on a fix's followers and ignorers could gain."""
    base = dropping(found, True, lambda a: True)[0]
    out = {}
    for name, dropped in (
        ("shown_before", ("never_followed", "followed_before")),
        ("followed_before", ("followed_before",)),
    ):
        precision = dropping(found, True, functools.partial(_kept, dropped=dropped))[0]
        out[name] = round((precision - base) / base, 4)
    return out


def table(result: dict[str, Any]) -> str:
    lines = ["ROC AUC, related vs unrelated answers (followers / ignorers / followers minus ignorers):"]
    for half, cells in result["auc"].items():
        for prior, cell in cells.items():
            feats = ", ".join(
                f"{f} {cell[f + '_followers']}/{cell[f + '_ignorers']}/{cell[f + '_difference']}"
                for f in FEATURES
            )
            lines.append(f"  {half:5} {prior:15} n {cell['answers']:3} ({cell['related']} related): {feats}")
    lines.append("drop rules chosen on the first half (hits within 5%), applied to the later half:")
    for family, r in result["drop_rules"].items():
        lines.append(
            f"  {family:12} first {r['first_precision_gain']:+.1%} (hits {r['first_hits']}); later precision "
            f"{r['later_precision_gain']:+.1%}, hits {r['later_hits']}, returned {r['later_returned']}"
        )
    bound = result["perfect_history"]
    lines.append(
        f"perfect learner from use (drop every unrelated answer shown before): later precision "
        f"{bound['shown_before']:+.1%}; only those followed before: {bound['followed_before']:+.1%}"
    )
    lines.append(f"answers' own precision: {result['answers_precision']}; the nearest tasks' followed fixes:")
    for key, cell in result["neighbours"].items():
        lines.append(
            f"  {key}: {cell['candidates']} fixes, precision {cell['precision']}; not returned already "
            f"{cell['not_returned']}, precision {cell['not_returned_precision']}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.related.by_query", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name} under results/")
    write = parser.parse_args(argv).write
    result = evaluate(load_repos())
    print(table(result))
    if write:  # sorted keys, one space: as from_use writes its results
        RESULTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
