"""``python -m evals.related.changes``: does what a past fix changed order it better? TUNING half.

An experiment (issue [recall-task]). The features of ``evals.related.learn`` are all views of one overlap
(the task's words and code keys against the entry's task, solution, files and symbols). A new kind of
signal: the *content* of the past fix's change, ``FixEntry.changes`` (lines ``file · symbol: removed →
added``, from the replayed hunks). The identifiers and words of the changed code (the part after the
``file · symbol:`` head, tokenized: CamelCase and snake_case split, match forms) are matched against the
task text's, IDF-weighted over the entries' change texts, in units of one word found in one entry:

- ``idents``: only the task text's identifier-shaped words (snake_case, camelCase, ``$``) and backticked
  spans, the code the text names;
- ``words``: every word of the task text, damped by the query's length as fixmem's evidence is.

Each variant is added to the shipped strength with a weight ``w`` (``w`` 0 is the shipped order). Printed
per variant: the perfect-gate bound (as ``evals.related.tune bound``: top 1..5 over the tasks with a
related fix), the gated figures with the score's own floor just above the best off-topic probe's score,
and with the shipped gate choosing whether to answer. Candidates: the ``CANDIDATES`` live entries of
highest shipped strength (floor off). The held-out half is never read here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from evals.related.core import Tally, load_repos
from evals.related.learn import Query, bound, candidates, gated, shipped_answer, shipped_gate
from evals.related.tune import SHA, Asked, history
from store import DEFAULT_WEIGHTS, FixEntry
from store.recall.code import is_identifier
from store.recall.index import idf
from store.recall.tokenize import match_forms, tokenize

CANDIDATES = 60
WEIGHTS = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0)
SIGNALS = (("idents", 1), ("words", 2), ("idents against the hunks (not stored)", 3))  # column of x
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_BACKTICK = re.compile(r"`([^`\n]{1,200})`")


@cache
def change_forms(changes: tuple[str, ...]) -> frozenset[str]:
    """Match forms of the identifiers and words of an entry's changed code (heads left out)."""
    code = [line.split(": ", 1)[1] if ": " in line else line for line in changes]
    return frozenset(match_forms(tokenize(" ".join(_IDENT.findall(" ".join(code))))))


def hunk_forms(hunks: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """Match forms of the identifiers and words of a commit's changed lines (``+``/``-``, up to 8 hunks
    of 14 lines: what an entry would hold if it kept its hunks instead of the change summary)."""
    lines = [line[1:] for h in hunks for line in h["lines"] if line[:1] in ("+", "-")]
    return frozenset(match_forms(tokenize(" ".join(_IDENT.findall(" ".join(lines))))))


def ident_forms(text: str) -> frozenset[str]:
    """Match forms of a text's identifier-shaped words and backticked spans."""
    words = [w for w in _IDENT.findall(text) if is_identifier(w)]
    words += _IDENT.findall(" ".join(_BACKTICK.findall(text)))
    return frozenset(match_forms(tokenize(" ".join(words))))


def signal(
    sets: Sequence[frozenset[str]], forms: frozenset[str], rows: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """Per row, the IDF (over the entries' ``sets``) of ``forms`` its set holds, in units of one form
    found in one entry."""
    n = len(sets)
    df: dict[str, int] = {}
    for s in sets:
        for f in s & forms:
            df[f] = df.get(f, 0) + 1
    unit = idf(n, 1)
    return np.array([sum(idf(n, df[f]) for f in sets[int(r)] & forms) / unit for r in rows])


def changes_x(
    data: Sequence[tuple[list[FixEntry], list[Asked]]], hunks: Mapping[str, frozenset[str]]
) -> list[Query]:
    """Start and off-topic queries: x = (shipped strength, ``idents`` signal, ``words`` signal, ``idents``
    against the commit's hunks)."""
    length_power = DEFAULT_WEIGHTS.evidence_length_power
    out: list[Query] = []
    for c in candidates(data, CANDIDATES):
        entries = c.view.entries
        damp = max(c.sig.query_weight / max(c.sig.unit, 1e-9), 1.0) ** length_power
        changed = [change_forms(tuple(e.changes or ())) for e in entries]
        idents = ident_forms(c.query.text)
        cols = [
            c.value[c.order],
            signal(changed, idents, c.order),
            signal(changed, frozenset(c.terms.forms), c.order) / damp,
            signal([hunks.get(e.event_id or "", frozenset()) for e in entries], idents, c.order),
        ]
        ids = [(entries[int(r)].event_id or "?")[:SHA] for r in c.order]
        q = c.query
        out.append(Query(c.repo, q.cls, np.stack(cols, axis=1), ids, q.same_function, q.same_file))
    return out


def gate_kept(queries: Sequence[Query], w: float, col: int) -> str:
    """The shipped policy with the gate on the shipped strength: answer only when the best shipped
    strength reaches the floor (so quiet and off-topic abstention are the shipped ones); then return, as
    ``ranking.rank`` does, the entries whose strength + ``w`` x the signal reaches the floor, plus the
    runner-up on that score, top 5 by it (ties to the newer entry, as candidates are ordered)."""
    t = Tally()
    off = Tally()
    for q in queries:
        shipped = q.x[:, 0]
        returned = [q.ids[i] for i in shipped_answer(shipped + w * q.x[:, col], shipped)]
        (off if q.cls == "off_topic" else t).add(returned, q.same_function, q.same_file)
    d = t.as_dict()
    return (
        f"start fn {d['hit_fn']}/{d['with_fn']} P {d['precision']} quiet {d['quiet']}/{d['unrelated']}; "
        f"off-topic quiet {off.quiet}/{off.unrelated}"
    )


def reach(queries: Sequence[Query]) -> str:
    """How often the ``idents`` signal can speak: start tasks whose text names any identifier, and the
    share of candidates with a non-zero signal among same-function fixes and among unrelated ones."""
    start = [q for q in queries if q.cls == "start" and q.same_function]
    named = sum(1 for q in start if q.x[:, 1].any() or q.x[:, 3].any())
    gold = [float(q.x[i, 1] > 0) for q in start for i, e in enumerate(q.ids) if e in q.same_function]
    other = [float(q.x[i, 1] > 0) for q in start for i, e in enumerate(q.ids) if e not in q.same_file]
    return (
        f"start tasks with a same-function fix: {len(start)}; any candidate shares an identifier form with "
        f"the text: {named}; same-function candidates with idents > 0: {np.mean(gold):.2f} of "
        f"{len(gold)}; unrelated candidates: {np.mean(other):.2f} of {len(other)}"
    )


def filled(data: Sequence[tuple[list[FixEntry], list[Asked]]]) -> str:
    """How many replayed entries carry change lines, and how many of those lines."""
    entries = [e for es, _ in data for e in es]
    with_changes = [e for e in entries if e.changes]
    lines = sum(len(e.changes or ()) for e in entries)
    return f"replayed entries {len(entries)}, with changes {len(with_changes)}, change lines {lines}"


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    repos = load_repos()
    data = [history(repo, [r for r in repos if r.name != repo.name]) for repo in repos]
    sys.stdout.write(filled(data) + "\n")
    hunks = {c.sha: hunk_forms(c.hunks) for repo in repos for c in repo.commits}
    queries = changes_x(data, hunks)
    sys.stdout.write(reach(queries) + "\n")
    variants = [(name, col, w) for name, col in SIGNALS for w in WEIGHTS if w > 0.0 or col == 1]
    for name, col, w in variants:
        scores = [q.x[:, 0] + w * q.x[:, col] for q in queries]
        label = f"strength + {w} x {name}" if w else "shipped strength"
        lines = [
            f"{label}: perfect gate: {bound(queries, scores)}",
            f"  shipped policy, gate on shipped strength: {gate_kept(queries, w, col)}",
            *(f"  own floor {gated(queries, scores, k)}" for k in (1, 3, 5)),
            *(f"  shipped gate {shipped_gate(queries, scores, k)}" for k in (1, 2, 3)),
        ]
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
