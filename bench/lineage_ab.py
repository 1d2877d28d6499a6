"""Issue 29's A/B: recall and append CPU with supersession by the turns' time, an old tree against this one.

Run: ``python -m bench.lineage_ab --old DIR [--rounds R] [--write]``, where ``DIR`` holds a checkout of the
tree to compare against (``git archive main | tar -x -C DIR``). Each round runs, for each tree in turn (the
order alternates between rounds, so a change of the machine's load does not favour one side), a child
process whose ``PYTHONPATH`` and working directory are that tree, which measures with ``bench.store_bench``:

- ``in_order``: a log of 500 entries appended in time order (live traffic): cold and warm recall CPU p50
  (``store_bench.bench_recall``), and CPU per append of 10 at the cap (``store_bench.bench_append``);
- ``late_replay``: the same 500 turns, the newest 400 first, then the oldest 100 in batches of 10 (a
  backfill behind live traffic): CPU per backfill append, then cold and warm recall CPU p50.

CPU is the child's own (``time.process_time``): the machine is shared, wall time is not comparable.
With ``--write`` the rounds and their medians go to ``bench/results/lineage_ab.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import load_average, machine, versions, write_result

ROOT = Path(__file__).resolve().parent.parent

# Runs in the child, inside the tree under test: only names both trees have.
_CHILD = """
import json, sys, tempfile, time
from pathlib import Path
from bench.store_bench import OWNER, PROJECT, bench_append, bench_recall, make_entries, make_queries
from bench.store_bench import percentiles
from bench.common import default_store
cold_runs, warm_runs = int(sys.argv[1]), int(sys.argv[2])
out = {"in_order": {}, "late_replay": {}}
r = bench_recall(500, cold_runs, warm_runs)
out["in_order"]["cold_cpu_p50_ms"] = r["cold"]["cpu_p50_ms"]
out["in_order"]["warm_cpu_p50_ms"] = r["warm"]["cpu_p50_ms"]
out["in_order"]["append10_at_cap_cpu_ms"] = bench_append(10, 300)["cpu_ms_per_append"]
entries = make_entries(500)
queries = make_queries(max(cold_runs, warm_runs))
def ask(store, q):
    return store.recall(OWNER, PROJECT, q["query"], files=q.get("files"), errors=q.get("errors"), now=2e9)
with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    store = default_store(root)
    for i in range(100, 500, 100):
        store.append(OWNER, PROJECT, entries[i : i + 100])
    c0 = time.process_time()
    for i in range(0, 100, 10):
        store.append(OWNER, PROJECT, entries[i : i + 10])
    out["late_replay"]["backfill_append10_cpu_ms"] = round((time.process_time() - c0) / 10 * 1000.0, 3)
    cold = ([], [])
    for q in queries[:cold_runs]:
        fresh = default_store(root)
        t0, c0 = time.perf_counter(), time.process_time()
        ask(fresh, q)
        cold[0].append(time.perf_counter() - t0)
        cold[1].append(time.process_time() - c0)
    out["late_replay"]["cold_cpu_p50_ms"] = percentiles(*cold)["cpu_p50_ms"]
    for q in queries[:50]:
        ask(store, q)
    warm = ([], [])
    for q in queries[:warm_runs]:
        t0, c0 = time.perf_counter(), time.process_time()
        ask(store, q)
        warm[0].append(time.perf_counter() - t0)
        warm[1].append(time.process_time() - c0)
    out["late_replay"]["warm_cpu_p50_ms"] = percentiles(*warm)["cpu_p50_ms"]
print(json.dumps(out))
"""


def run_child(tree: Path, cold_runs: int, warm_runs: int) -> dict[str, Any]:
    """One measurement in a child process importing ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(cold_runs), str(warm_runs)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def medians(rounds: list[dict[str, Any]], side: str) -> dict[str, dict[str, float]]:
    """The median over rounds of each figure of ``side``."""
    first = rounds[0][side]
    return {
        case: {name: round(statistics.median(r[side][case][name] for r in rounds), 3) for name in figures}
        for case, figures in first.items()
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the tree to compare against")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cold-runs", type=int, default=20)
    parser.add_argument("--warm-runs", type=int, default=400)
    parser.add_argument("--write", action="store_true", help="write bench/results/lineage_ab.json")
    args = parser.parse_args(argv)
    start_load = load_average()
    trees = {"old": args.old.resolve(), "new": ROOT}
    rounds: list[dict[str, Any]] = []
    for i in range(args.rounds):
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        got = {side: run_child(trees[side], args.cold_runs, args.warm_runs) for side in order}
        rounds.append({"order": list(order), "load_average_1m": load_average(), **got})
        print(json.dumps(rounds[-1]), file=sys.stderr)
    result = {
        "benchmark": "lineage_ab",
        "machine": machine(start_load),
        "versions": versions(),
        "old_tree": str(trees["old"]),
        "settings": {"rounds": args.rounds, "cold_runs": args.cold_runs, "warm_runs": args.warm_runs},
        "median": {"old": medians(rounds, "old"), "new": medians(rounds, "new")},
        "rounds": rounds,
    }
    print(json.dumps(result["median"], indent=2))
    if args.write:
        write_result("lineage_ab", result)
    return result


if __name__ == "__main__":
    main()
