"""``python -m evals.related.meaning``: does a meaning signal earn its place at task start? (issue 32, item 2)

The signal: the cosine between static embeddings (``wordllama``, the ``l2_supercat`` 256-dimension model
whose weights ship inside its wheel, loaded with downloads disabled) of the task text and of each
candidate fix's text — its request (``task``), or its request and solution. Run it with the extra
installed (``pip install wordllama``); it is no dependency of fixmem.

Both halves are replayed as ``evals.related.tune`` does (``history``), and each ``start`` and
``off_topic`` query gets the ``CANDIDATES`` live entries of highest shipped strength (floor off,
``evals.related.learn.candidates``). Policies, each a family with a grid of parameters:

- ``shipped``: the shipped answer rebuilt from the candidates (gate, floor, runner-up); with no meaning
  signal it must equal fixmem's own held-out figures, which the result file checks;
- ``blend``: strength + ``w`` x (cosine - ``c0``), the shipped gate deciding whether to answer (an extra
  feature of the order and of the floor);
- ``veto``: the shipped answer without the fixes whose cosine is under ``t`` (a precision gate);
- ``gate``: the shipped answer only when its best cosine reaches ``t``, else nothing (abstention);
- ``rerank``: as many fixes as the shipped answer, chosen by cosine among the ``m`` strongest;
- ``rescue``: when the shipped answer is empty, up to ``n`` of the 10 strongest candidates whose strength
  is at least ``s`` (under the floor of 1) and whose cosine reaches ``t`` (more hits where it abstains).

Each family's parameters are chosen on the TUNING half only (most same-function hits at a precision at
least the shipped one's and off-topic abstention no worse, ties to the higher precision); a choice
*moves* the figures when it has more hits at a precision at least the shipped one's, or a precision
``CLEARLY`` higher at as many hits. The chosen ones are then reported on the held-out half beside the
shipped answer and BM25 (the baseline of ``evals.related.run``, top 5 with a score above
0), with the latency the signal adds per recall. ``--write`` writes ``results/meaning.json``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evals.related.core import Tally, bm25_rank, load_repos
from evals.related.learn import candidates, shipped_answer
from evals.related.run import entry_text, evaluate
from evals.related.tune import SHA, Asked, history
from store import FixEntry
from store.meaning import Embed, Meaning, wordllama_embed

HERE = Path(__file__).parent
RESULT = HERE / "results" / "meaning.json"
CANDIDATES = 60
K = 5
MODEL = "wordllama 0.4 l2_supercat, 256 dimensions (weights in the wheel, downloads disabled)"
TEXTS: dict[str, Callable[[FixEntry], str]] = {
    "task": lambda e: e.task,
    "task+solution": lambda e: e.task + "\n" + e.solution,
}
Policy = Callable[["Query"], list[int]]
GRID: dict[str, list[dict[str, float]]] = {
    "blend": [{"w": w, "c0": c0} for w in (0.5, 1.0, 2.0, 4.0, 8.0) for c0 in (0.3, 0.4, 0.5, 0.6)],
    "veto": [{"t": t} for t in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)],
    "gate": [{"t": t} for t in (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)],
    "rerank": [{"m": m} for m in (2.0, 3.0, 5.0, 10.0)],
    "rescue": [
        {"s": s, "t": t, "n": n}
        for s in (0.5, 0.6, 0.7, 0.8, 0.9)
        for t in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
        for n in (1.0, 2.0)
    ],
}
CLEARLY = 0.02  # precision this much higher counts as "clearly higher"


def load_model() -> tuple[Embed, float]:
    """The embedding function (unit rows, ``store.meaning``) and the seconds the import and load took;
    raises ``ImportError`` without the extra, ``FileNotFoundError`` if the wheel's weights are missing."""
    start = time.perf_counter()
    embed = wordllama_embed()
    return embed, time.perf_counter() - start


def through_recall(embed: Embed) -> dict[str, Any]:
    """The shipped path: the replay of ``evals.related.run`` with ``FixStore(meaning=...)``, fixmem's
    figures per half and class beside the committed text-only run's (``results/related.json``)."""
    summary = evaluate(load_repos(), meaning=Meaning(embed))["summary"]
    path = HERE / "results" / "related.json"
    committed = json.loads(path.read_text())["summary"] if path.exists() else {}
    keep = ("with_fn", "hit_fn", "with_file", "hit_file", "returned", "precision", "quiet", "unrelated")
    out: dict[str, Any] = {}
    for split in ("tune", "held_out"):
        for row in ("start", "one_line", "mid_files", "mid_error", "off_topic", "known_item"):
            cells = {"text only (results/related.json)": committed.get(split, {}).get(row, {}).get("fixmem")}
            cells["text + meaning"] = summary[split][row]["fixmem"]
            if row == "start":
                cells["BM25"] = summary[split][row]["bm25"]
            out[f"{split} {row}"] = {
                name: {k: t[k] for k in keep} for name, t in cells.items() if t is not None
            }
    return out


@dataclass
class Query:
    """One start or off-topic query: per candidate (shipped order) its strength, cosine per text kind."""

    cls: str
    strength: npt.NDArray[np.float64]
    cosine: dict[str, npt.NDArray[np.float64]]
    ids: list[str]
    same_function: frozenset[str]
    same_file: frozenset[str]
    bm25: list[str]


def queries(data: Sequence[tuple[list[FixEntry], list[Asked]]], embed: Embed) -> list[Query]:
    """The queries of the replayed ``data`` with their candidates' cosines (entry vectors cached by id)."""
    cache: dict[tuple[str, str], npt.NDArray[np.float32]] = {}
    out: list[Query] = []
    for c in candidates(data, CANDIDATES):
        entries = [c.view.entries[int(r)] for r in c.order]
        q = embed([c.query.text])[0]
        cosine = {}
        for kind, text in TEXTS.items():
            missing = [e for e in entries if (kind, e.id) not in cache]
            if missing:
                for e, v in zip(missing, embed([text(e) for e in missing]), strict=True):
                    cache[(kind, e.id)] = v
            cosine[kind] = np.array([float(cache[(kind, e.id)] @ q) for e in entries])
        texts = [entry_text(e) for e in c.view.entries]
        bm25 = [(c.view.entries[i].event_id or "?")[:SHA] for i, _ in bm25_rank(texts, c.query.text)]
        ids = [(e.event_id or "?")[:SHA] for e in entries]
        out.append(
            Query(c.query.cls, c.value[c.order], cosine, ids, c.query.same_function, c.query.same_file, bm25)
        )
    return out


def policy(family: str, kind: str, p: dict[str, float]) -> Policy:
    """The answer (candidate rows, best first) of one policy with parameters ``p`` on ``kind`` texts."""

    def answer(q: Query) -> list[int]:
        s, cos = q.strength, q.cosine.get(kind, np.zeros_like(q.strength))
        base = shipped_answer(s, s)
        if family == "blend":
            return shipped_answer(s + p["w"] * (cos - p["c0"]), s)
        if family == "veto":
            return [i for i in base if cos[i] >= p["t"]]
        if family == "gate":
            return base if base and max(cos[i] for i in base) >= p["t"] else []
        if family == "rescue":
            if base:
                return base
            top = [int(i) for i in np.argsort(-s, kind="stable")[:10]]
            return [i for i in top if s[i] >= p["s"] and cos[i] >= p["t"]][: int(p["n"])]
        if family == "rerank":
            strongest = range(min(int(p["m"]), s.size))
            return sorted(strongest, key=lambda i: -cos[i])[: len(base)] if base else []
        return base

    return answer


def tally(qs: Sequence[Query], answer: Callable[[Query], list[str]]) -> dict[str, Any]:
    """Task-start figures (hits, precision, quiet) and off-topic abstention of one answer function."""
    start, off = Tally(), Tally()
    for q in qs:
        (off if q.cls == "off_topic" else start).add(answer(q), q.same_function, q.same_file)
    d = start.as_dict()
    keep = ("with_fn", "hit_fn", "with_file", "hit_file", "returned", "precision", "quiet", "unrelated")
    return {**{k: d[k] for k in keep}, "off_topic_quiet": off.quiet, "off_topic": off.unrelated}


def ids_of(answer: Policy) -> Callable[[Query], list[str]]:
    return lambda q: [q.ids[i] for i in answer(q)]


def choose(tune: Sequence[Query], shipped: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Per family and text kind, the parameters chosen on the tuning half: the most same-function hits at
    a precision at least the shipped one's and off-topic abstention no worse (ties: higher precision)."""
    for family, grid in GRID.items():
        for kind in TEXTS:
            best: dict[str, Any] | None = None
            for p in grid:
                t = tally(tune, ids_of(policy(family, kind, p)))
                ok = (t["precision"] or 0) >= shipped["precision"] and (
                    t["off_topic_quiet"] >= shipped["off_topic_quiet"]
                )
                key = (ok, t["hit_fn"], t["precision"] or 0)
                if best is None or key > best["key"]:
                    best = {"family": family, "text": kind, "params": p, "tune": t, "key": key}
            if best is not None:
                del best["key"]
                best["moves_tune"] = moves(best["tune"], shipped)
                yield best


def moves(t: dict[str, Any], shipped: dict[str, Any]) -> bool:
    """More same-function hits at a precision at least the shipped one's, or a precision ``CLEARLY``
    higher at as many hits, with off-topic abstention no worse."""
    p, p0 = t["precision"] or 0.0, shipped["precision"] or 0.0
    more_hits = t["hit_fn"] > shipped["hit_fn"] and p >= p0
    more_precise = t["hit_fn"] >= shipped["hit_fn"] and p >= p0 + CLEARLY
    return (more_hits or more_precise) and t["off_topic_quiet"] >= shipped["off_topic_quiet"]


def separation(qs: Sequence[Query]) -> dict[str, float]:
    """How often a same-function candidate scores above one that changed no same file, over the start
    queries with a same-function fix (pairwise, ties half): the shipped strength and each cosine alone."""
    scores: dict[str, Callable[[Query], npt.NDArray[np.float64]]] = {"strength": lambda q: q.strength}
    for kind in TEXTS:
        scores[f"cosine on {kind}"] = lambda q, kind=kind: q.cosine[kind]  # type: ignore[misc]
    out = {}
    for name, score in scores.items():
        wins: list[float] = []
        for q in (q for q in qs if q.cls == "start" and q.same_function):
            s = score(q)
            pos = [s[i] for i, e in enumerate(q.ids) if e in q.same_function]
            neg = np.array([s[i] for i, e in enumerate(q.ids) if e not in q.same_file])
            wins.extend(float(np.mean((neg < p) + 0.5 * (neg == p))) for p in pos if neg.size)
        out[name] = round(float(np.mean(wins)), 3) if wins else 0.0
    return out


def latency(embed: Embed, entries: Sequence[FixEntry], text: str, repeat: int = 50) -> dict[str, float]:
    """Seconds the signal adds: embedding ``entries`` once (a cold cache), then per recall (warm): the
    task text's vector and its cosine with every cached entry vector (median and max of ``repeat``)."""
    start = time.perf_counter()
    matrix = embed([e.task for e in entries])
    cold = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        _ = matrix @ embed([text])[0]
        times.append(time.perf_counter() - start)
    return {
        "entries": len(entries),
        "embed_all_entries_seconds": round(cold, 4),
        "per_recall_median_seconds": round(float(np.median(times)), 5),
        "per_recall_max_seconds": round(max(times), 5),
    }


def run() -> dict[str, Any]:
    """The whole experiment: the choice on the tuning half, the figures on the held-out half."""
    embed, load_seconds = load_model()
    shipped_path = through_recall(embed)
    repos = load_repos()
    halves = {}
    for split in ("tune", "held_out"):
        data = [history(r, [o for o in repos if o.name != r.name], split=split) for r in repos]
        halves[split] = (data, queries(data, embed))
    tune, held = halves["tune"][1], halves["held_out"][1]
    base = policy("shipped", "task", {})
    shipped_tune, shipped_held = tally(tune, ids_of(base)), tally(held, ids_of(base))
    chosen = list(choose(tune, shipped_tune))
    rows = [{"system": "fixmem text only (shipped answer rebuilt from the candidates)", **shipped_held}]
    for c in chosen:
        t = tally(held, ids_of(policy(c["family"], c["text"], c["params"])))
        name = f"fixmem + meaning: {c['family']} on {c['text']} {json.dumps(c['params'])}"
        moved = {"moves_tune": c["moves_tune"], "moves_held_out": moves(t, shipped_held)}
        rows.append({"system": name, **moved, **t})
    rows.append({"system": "BM25 (top 5, score > 0)", **tally(held, lambda q: q.bm25)})
    biggest = max(halves["held_out"][0], key=lambda d: len(d[0]))[0]
    task = next(q.text for q in halves["held_out"][0][0][1] if q.cls == "start")
    ship = [r["system"] for r in rows if r.get("moves_tune") and r.get("moves_held_out")]
    rescue = next(c for c in chosen if c["family"] == "rescue" and c["text"] == "task")
    control = policy("rescue", "task", {**rescue["params"], "t": -1.0})  # the same rescue, no cosine
    return {
        "model": MODEL,
        "candidates": CANDIDATES,
        "k": K,
        "clearly": CLEARLY,
        "tune": {"shipped": shipped_tune, "chosen": chosen},
        "held_out": rows,
        "held_out_fixmem_run": reference(),
        "moves_both_halves": ship,
        "rescue_without_cosine": {
            "tune": tally(tune, ids_of(control)),
            "held_out": tally(held, ids_of(control)),
        },
        "separation_tune": separation(tune),
        "through_recall": shipped_path,
        "latency": {"cold_load_seconds": round(load_seconds, 3), **latency(embed, biggest, task)},
    }


def reference() -> dict[str, Any]:
    """fixmem's and BM25's held-out task-start figures from the committed run (``results/related.json``),
    beside the rebuilt answer (the rebuild returns a few fixes more: the same hits, precision within
    0.01)."""
    path = HERE / "results" / "related.json"
    if not path.exists():
        return {}
    start = json.loads(path.read_text())["summary"]["held_out"]["start"]
    keep = ("with_fn", "hit_fn", "returned", "precision", "quiet", "unrelated")
    return {system: {k: start[system][k] for k in keep} for system in ("fixmem", "bm25")}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    result = run()
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if "--write" in args:
        RESULT.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
