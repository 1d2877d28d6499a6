"""Store benchmark: recall latency (cold and warm) at 50 and 500 entries, and batched append throughput.

Run: ``python -m bench.store_bench [--quick]``. Prints JSON and writes ``bench/results/store.json``.

- *cold* recall: a fresh ``FixStore`` per query (no cache): read and parse the log, read the index,
  build the view (keyword postings, vectors), rank. What the first query of a project in a process pays
  (the process's token-hash memo is warm, as it is in a long-running server).
- *warm* recall: one ``FixStore``, the log unchanged between queries: what every later query pays.
- *append*: a project already at the cap (so every batch also rotates: one atomic rewrite of the log),
  batches of 1, 10 and 100 entries; *append_below_cap*: a project of 250 entries, no rotation. With
  fsync, on the file system of the system temp directory. Entries/s = entries appended / wall time;
  CPU ms per append is reported too (wall time includes fsync latency, and other load on the machine).

Entries are synthetic but shaped like real ones: tasks from templates over a vocabulary of components,
symptoms and error types, 1-3 files from a pool, mixed outcomes, a solution line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import default_store
from evals.related.core import load_repos
from store import FixEntry, FixStore, TestRun, entry_id

RESULTS = Path(__file__).resolve().parent / "results" / "store.json"
OWNER = "bench"
PROJECT = "/srv/bench-app"

COMPONENTS = [
    "login", "session", "checkout", "cart", "invoice", "search", "upload", "thumbnail", "cache", "scheduler",
    "webhook", "oauth", "billing", "export", "import", "migration", "router", "serializer", "parser", "queue",
    "mailer", "profile", "settings", "admin", "reports", "metrics", "logger", "config", "cli", "api client",
]  # fmt: skip
SYMPTOMS = [
    "times out", "returns 500", "crashes on empty input", "leaks memory", "is slow", "double charges",
    "drops the last row", "ignores the locale", "fails on unicode names", "retries forever",
    "loses the cursor", "deadlocks under load", "rejects valid tokens", "writes a corrupt file",
]  # fmt: skip
ERRORS = [
    "TimeoutError: operation timed out after # seconds", "KeyError: 'user_id'",
    "ValueError: invalid literal for int() with base #", "TypeError: 'NoneType' object is not subscriptable",
    "AssertionError: assert # == #", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x#",
    "ConnectionResetError: [Errno #] Connection reset by peer",
    "RecursionError: maximum recursion depth exceeded",
    "sqlite3.OperationalError: database is locked", "PermissionError: [Errno #] Permission denied: '<path>'",
]  # fmt: skip
VERBS = ["fix", "investigate why", "make sure", "stop", "repair"]
DIRS = ["src", "src/app", "src/core", "lib", "services", "api", "web"]


def make_entries(n: int, seed: int = 7, start: int = 0) -> list[FixEntry]:
    """``n`` synthetic entries of the bench project."""
    rng = random.Random(seed + start)
    entries = []
    for i in range(start, start + n):
        component = rng.choice(COMPONENTS)
        symptom = rng.choice(SYMPTOMS)
        files = [f"{rng.choice(DIRS)}/{component.replace(' ', '_')}{rng.choice(['', '_utils', '_views'])}.py"]
        files += [
            f"{rng.choice(DIRS)}/{rng.choice(COMPONENTS).replace(' ', '_')}.py"
            for _ in range(rng.randint(0, 2))
        ]
        outcome = rng.choices(["fixed", "partial", "unverified"], weights=[6, 2, 2])[0]
        errors = [rng.choice(ERRORS)] if rng.random() < 0.7 else []
        tests = (
            None
            if outcome == "unverified"
            else TestRun(command="pytest -q", ok=outcome == "fixed", summary="3 passed")
        )
        entries.append(
            FixEntry(
                id=entry_id(OWNER, PROJECT, f"turn-{i}"),
                ts=1_700_000_000.0 + i * 60,
                project=PROJECT,
                task=f"{rng.choice(VERBS)} the {component} {symptom}",
                files=files,
                symbols=[f"{component.replace(' ', '_')}_handler"],
                errors=errors,
                tests=tests,
                outcome=outcome,
                solution=f"changed {', '.join(files)}; tests: 3 passed. Guarded the {component} path.",
                tags=["python", outcome],
                event_id=f"turn-{i}",
            )
        )
    return entries


def make_queries(count: int, seed: int = 11) -> list[dict[str, Any]]:
    """A mix of related queries (with and without files/errors) and unrelated ones that must abstain."""
    rng = random.Random(seed)
    queries: list[dict[str, Any]] = []
    for i in range(count):
        kind = i % 4
        component = rng.choice(COMPONENTS)
        if kind == 0:
            queries.append({"query": f"the {component} {rng.choice(SYMPTOMS)}"})
        elif kind == 1:
            queries.append({"query": f"{component} broken", "errors": [rng.choice(ERRORS)]})
        elif kind == 2:
            queries.append(
                {"query": f"change {component}", "files": [f"src/{component.replace(' ', '_')}.py"]}
            )
        else:
            queries.append(
                {
                    "query": rng.choice(
                        ["write a haiku about spring", "deploy to kubernetes", "rename the repo"]
                    )
                }
            )
    return queries


_PROSE = (
    "when the service starts under load the request handler sometimes returns before the worker has "
    "finished and the user sees an old page we think the retry logic and the way the queue is drained "
    "interact badly with the new timeout settings this has been reported by several people on the forum "
    "and in the tracker with screenshots logs and a small reproduction that fails about one time in ten"
)
PROSE = _PROSE.split()


def make_task_texts(count: int, words: int = 600, seed: int = 13) -> list[str]:
    """Issue-sized task texts of about ``words`` words: a title naming a component, prose, identifiers,
    a path, a traceback frame and an error line (what a harness hands over at task start)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        component = rng.choice(COMPONENTS)
        name = component.replace(" ", "_")
        body = [f"{component}: {rng.choice(SYMPTOMS)}", ""]
        while sum(len(line.split()) for line in body) < words:
            sentence = " ".join(rng.choice(PROSE) for _ in range(rng.randint(8, 20)))
            extra = rng.choice([
                f"`{name}_handler()`", f"src/{name}.py", f"{name.title().replace('_', '')}Client",
                f'File "src/{name}.py", line {rng.randint(1, 400)}, in {name}', rng.choice(ERRORS), "",
            ])  # fmt: skip
            body.append(f"{sentence} {extra}")
        texts.append("\n".join(body))
    return texts


def real_task_texts(count: int, words: int = 600) -> list[str]:
    """Task texts of about ``words`` words made of real PR descriptions (evals/related's data, in commit
    order, joined line by line until long enough): real prose, whose vocabulary is far wider than
    ``make_task_texts``'s, so fewer words are already in the tokenizer's memos."""
    lines = [line for repo in load_repos() for c in repo.commits for line in [*c.text.splitlines(), ""]]
    texts: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        current.append(line)
        size += len(line.split())
        if size >= words:
            texts.append("\n".join(current))
            current, size = [], 0
            if len(texts) == count:
                break
    return texts


def bench_long_recall(n: int, runs: int, words: int = 600, *, real: bool = False) -> dict[str, Any]:
    """Warm recall latency at ``n`` entries for task texts of about ``words`` words (issue [recall-task]);
    ``real``: texts made of real PR descriptions (``real_task_texts``) instead of generated ones."""
    texts = real_task_texts(min(runs, 200), words) if real else make_task_texts(min(runs, 200), words)
    load_before = os.getloadavg()[0]  # the machine is shared: wall time waits for a core, CPU time not
    with tempfile.TemporaryDirectory() as tmp:
        store = populated(Path(tmp), n)
        for text in texts[:50]:  # warm up the cache and the hash memo
            store.recall(OWNER, PROJECT, text, now=2e9)
        warm: tuple[list[float], list[float]] = ([], [])
        hits = 0
        for i in range(runs):
            text = texts[i % len(texts)]
            result, wall, cpu = _timed(lambda t=text: store.recall(OWNER, PROJECT, t, now=2e9))
            warm[0].append(wall)
            warm[1].append(cpu)
            hits += bool(result)
        return {
            "entries": n,
            "query_words": round(float(np.mean([len(t.split()) for t in texts])), 1),
            "warm": percentiles(*warm),
            "share_of_queries_answered": round(hits / runs, 3),
            "load_average_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }


def percentiles(wall_s: list[float], cpu_s: list[float]) -> dict[str, float]:
    """Wall-clock p50 / p99 / mean and CPU-time p50 / p99, in milliseconds.

    CPU time (``time.process_time``) leaves out the time this process waited for a core: on a shared
    machine it is the cost of the code, wall time is what a caller saw.
    """
    ms = np.array(wall_s) * 1000.0
    cpu = np.array(cpu_s) * 1000.0
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 4),
        "p99_ms": round(float(np.percentile(ms, 99)), 4),
        "mean_ms": round(float(ms.mean()), 4),
        "cpu_p50_ms": round(float(np.percentile(cpu, 50)), 4),
        "cpu_p99_ms": round(float(np.percentile(cpu, 99)), 4),
        "samples": len(wall_s),
    }


def _timed(call: Any) -> tuple[Any, float, float]:
    """``call()`` with its wall and CPU seconds."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - t0, time.process_time() - c0


def populated(root: Path, n: int, cap: int = 500) -> FixStore:
    """A store whose bench project holds ``n`` entries."""
    store = FixStore(root, cap=cap)
    entries = make_entries(n)
    for i in range(0, n, 100):
        store.append(OWNER, PROJECT, entries[i : i + 100])
    return store


def bench_recall(n: int, cold_runs: int, warm_runs: int) -> dict[str, Any]:
    """Cold and warm recall latency at ``n`` entries."""
    queries = make_queries(max(cold_runs, warm_runs))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = populated(root, n)
        cold: tuple[list[float], list[float]] = ([], [])
        for q in queries[:cold_runs]:
            fresh = default_store(root)
            _, wall, cpu = _timed(
                lambda f=fresh, q=q: f.recall(
                    OWNER, PROJECT, q["query"], files=q.get("files"), errors=q.get("errors"), now=2e9
                )
            )
            cold[0].append(wall)
            cold[1].append(cpu)
        for q in queries[:50]:  # warm up the cache and the hash memo
            store.recall(OWNER, PROJECT, q["query"], files=q.get("files"), errors=q.get("errors"), now=2e9)
        warm: tuple[list[float], list[float]] = ([], [])
        hits = 0
        for q in queries[:warm_runs]:
            result, wall, cpu = _timed(
                lambda q=q: store.recall(
                    OWNER, PROJECT, q["query"], files=q.get("files"), errors=q.get("errors"), now=2e9
                )
            )
            warm[0].append(wall)
            warm[1].append(cpu)
            hits += bool(result)
        return {
            "entries": n,
            "cold": percentiles(*cold),
            "warm": percentiles(*warm),
            "share_of_queries_answered": round(hits / warm_runs, 3),
        }


def bench_append(batch: int, total: int, cap: int = 500, start: int | None = None) -> dict[str, Any]:
    """Entries/s appending ``total`` new entries in batches of ``batch`` to a project holding ``start``
    entries (default: ``cap``, so every batch rotates)."""
    start = cap if start is None else start
    with tempfile.TemporaryDirectory() as tmp:
        store = populated(Path(tmp), start, cap=cap)
        entries = make_entries(total, seed=99, start=10_000)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, total, batch):
            store.append(OWNER, PROJECT, entries[i : i + batch])
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        appends = -(-total // batch)
        return {
            "batch": batch,
            "entries": total,
            "log_entries_before": start,
            "rotates": start + total > cap,
            "entries_per_s": round(total / elapsed, 1),
            "ms_per_append": round(elapsed / appends * 1000.0, 3),
            "cpu_ms_per_append": round(cpu / appends * 1000.0, 3),
            "log_entries_after": store.stats(OWNER, PROJECT).total,
        }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print JSON, write ``bench/results/store.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer runs (a smoke test)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--long-only", action="store_true", help="only the 600-word task text case (updated in the results)"
    )
    args = parser.parse_args(argv)
    cold_runs, warm_runs = (10, 200) if args.quick else (60, 3000)
    if args.long_only:
        long = bench_long_recall(500, warm_runs)
        stored: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        stored["recall_600_word_task"] = long
        stored["recall_600_word_real_task"] = bench_long_recall(500, warm_runs, real=True)
        stored["goal_600_word_task_p99_ms"] = 5.0
        stored["goal_600_word_task_met"] = long["warm"]["p99_ms"] <= 5.0
        stored["goal_600_word_task_met_cpu_time"] = long["warm"]["cpu_p99_ms"] <= 5.0
        print(
            json.dumps(
                {k: stored[k] for k in ("recall_600_word_task", "recall_600_word_real_task")}, indent=2
            )
        )
        if not args.no_write:
            RESULTS.write_text(json.dumps(stored, indent=2) + "\n")
        return stored
    result: dict[str, Any] = {
        "benchmark": "store",
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": _cpus(),
            "load_average_1m": round(os.getloadavg()[0], 2),
        },
        "goal": {"warm_p50_ms": 1.0, "warm_p99_ms": 5.0, "at_entries": 500},
        "recall": [bench_recall(n, cold_runs, warm_runs) for n in (50, 500)],
        "recall_600_word_task": bench_long_recall(500, warm_runs),
        "recall_600_word_real_task": bench_long_recall(500, warm_runs, real=True),
        "append": [
            bench_append(b, t)
            for b, t in (
                (1, 100 if args.quick else 300),
                (10, 500 if args.quick else 2000),
                (100, 1000 if args.quick else 5000),
            )
        ],
        "append_below_cap": [
            bench_append(b, t, cap=500, start=250)
            for b, t in ((1, 100 if args.quick else 200), (10, 200 if args.quick else 250))
        ],
    }
    warm500 = next(r for r in result["recall"] if r["entries"] == 500)["warm"]
    result["goal_met"] = warm500["p50_ms"] <= 1.0 and warm500["p99_ms"] <= 5.0
    result["goal_met_cpu_time"] = warm500["cpu_p50_ms"] <= 1.0 and warm500["cpu_p99_ms"] <= 5.0
    result["goal_600_word_task_p99_ms"] = 5.0
    result["goal_600_word_task_met"] = result["recall_600_word_task"]["warm"]["p99_ms"] <= 5.0
    result["goal_600_word_task_met_cpu_time"] = result["recall_600_word_task"]["warm"]["cpu_p99_ms"] <= 5.0
    text = json.dumps(result, indent=2)
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text + "\n")
    return result


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


if __name__ == "__main__":
    main()
