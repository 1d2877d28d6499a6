"""Issue 21's A/B: end-to-end events/s and CPU per event by stage, an old tree against this one, same run.

Run: ``python -m bench.hotpath_ab --old DIR [--rounds R] [--events N] [--small N] [--write]``, where ``DIR``
holds a checkout of the tree to compare against (``git archive main | tar -x -C DIR``). Each round runs,
for each tree in turn (the order alternates between rounds, so a change of the machine's load does not
favour one side), ``bench.throughput.pipeline_run`` in a child process whose ``PYTHONPATH`` and working
directory are that tree: an idle fleet (embedded Redis, a consumer, 2 workers) takes ``--events`` realistic
~25 KB turns (``bench.events``), ``--small`` small ~1.2 KB turns (``bench.pipeline_bench.make_event``) and
``--turn4k`` ~4 KB turns (the small ones, each with a ~2.9 KB file read first).
CPU is the processes' own (``/proc``: user + system) from the fleet's ready moment to the last event counted
(start-up and imports excluded), split by role (consumer, worker, redis), per event, and Redis's own
``INFO cpu`` and AOF bytes written per event (AOF rewrites off during the run);
the machine is shared, so CPU per event is the figure to compare, events/s only within a round. With
``--write`` the rounds go to ``bench/results/<--name>.json`` (``hotpath_ab``). Each round also runs
``--baseline`` mix events through RQ's ``SimpleWorker``, one job per event (``bench.baseline``), with as
many workers, in this tree.
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
ROLES = ("consumer", "worker", "redis")

# Runs in the child, inside the tree under test: only names both trees have. CPU is counted from the
# moment the fleet is idle and ready (process start-up and imports excluded) until every event is counted.
_CHILD = """
import json, shutil, sys, tempfile, time
from pathlib import Path
import redis
from bench.backfill_bench import pipeline
from bench.common import cpu_seconds, load_average
from bench.events import make_events
from bench.pipeline_bench import make_event
from fixmem.settings import Settings
from workers.counters import read_counters
kind, n, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def padded(i):  # a small turn whose agent first read a ~2.9 KB file: ~4 KB on the wire
    event = json.loads(make_event(i, 50))
    line = "    value_{i}_{k} = compute(data, key={k!r}, default=None)  # line {k}\\n"
    code = "".join(line.format(i=i, k=k) for k in range(40))
    read = {"tool": "bash", "input": {"command": f"sed -n 1,40p src/app/mod{i % 7}.py"}, "output": code,
            "exit_code": 0}
    event["tool_events"].insert(0, read)
    return json.dumps(event).encode()
if kind == "mix":
    events = make_events(n)
elif kind == "turn4k":
    events = [padded(i) for i in range(n)]
else:
    events = [make_event(i, 50) for i in range(n)]
stream = Settings.from_env({}).stream
load = load_average()
tmp = tempfile.mkdtemp(prefix="fixmem-hotpath-")
with pipeline(Path(tmp), workers) as (url, pids):
    client = redis.Redis.from_url(url, socket_timeout=300)
    def redis_info():  # Redis's own account: used_cpu_sys + used_cpu_user, and the AOF's size
        cpu, aof = client.info("cpu"), client.info("persistence")
        return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]), int(aof["aof_current_size"])
    client.config_set("auto-aof-rewrite-percentage", 0)  # AOF bytes written are counted, not rewrites
    info_before = redis_info()
    before = {role: cpu_seconds(pid) for role, pid in pids.items()}
    started = time.perf_counter()
    for start in range(0, len(events), 100):
        with client.pipeline(transaction=False) as pipe:
            for raw in events[start : start + 100]:
                pipe.xadd(stream, {b"event": raw})
            pipe.execute()
    def handled():
        fleet = read_counters(client)
        return sum(fleet.events.values()) + sum(fleet.dead_letters.values())
    while handled() < n:
        time.sleep(0.02)
    took = time.perf_counter() - started
    after = {role: cpu_seconds(pid) for role, pid in pids.items()}
    info_after = redis_info()
    fleet = read_counters(client)
shutil.rmtree(tmp, ignore_errors=True)
cpu = {}
for role in after:
    key = "worker" if role.startswith("worker") else role
    cpu[key] = cpu.get(key, 0.0) + after[role] - before[role]
jobs = fleet.pipeline.get("jobs_done", 0)
print("RESULT " + json.dumps({
    "events": n, "mean_event_bytes": round(sum(map(len, events)) / n), "events_per_s": round(n / took, 1),
    "cpu_seconds": cpu, "events_per_job": round(n / max(1, jobs), 1),
    "events_by_result": dict(fleet.events), "load_average_1m_at_start": load,
    "redis_info_cpu_ms_per_event": round(1000 * (info_after[0] - info_before[0]) / n, 3),
    "aof_bytes_per_event": round((info_after[1] - info_before[1]) / n),
}))
"""

# RQ's SimpleWorker, one job per event (``bench.baseline``, the 30x yardstick), in this tree.
_BASELINE = """
import json, sys
from bench.events import make_events
from bench.throughput import baseline_run, private_redis
n, workers = int(sys.argv[1]), int(sys.argv[2])
with private_redis() as (url, tmp):
    run = baseline_run(url, tmp / "simple", make_events(n), workers, "simple")
print("RESULT " + json.dumps({k: run[k] for k in ("events", "events_per_s", "load_average_1m_at_start")}))
"""


def child(tree: Path, code: str, *args: object) -> dict[str, Any]:
    """Run ``code`` with the code of ``tree``; its ``RESULT`` line, parsed."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return result


def child_run(tree: Path, kind: str, events: int, workers: int) -> dict[str, Any]:
    """One ``pipeline_run`` of ``kind`` (``mix`` or ``small``) with the code of ``tree``."""
    return summarize(child(tree, _CHILD, kind, events, workers))


def summarize(run: dict[str, Any]) -> dict[str, Any]:
    """The figures compared: events/s, CPU ms per event by role and in all, the load at start."""
    n = run["events"]
    by_role = {role: round(1000 * run["cpu_seconds"].get(role, 0.0) / n, 3) for role in ROLES}
    return {
        **{k: v for k, v in run.items() if k != "cpu_seconds"},
        "cpu_ms_per_event": by_role,
        "cpu_ms_per_event_all_processes": round(sum(by_role.values()), 3),
    }


def medians(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of each figure over rounds."""
    return {
        "events_per_s": statistics.median(r["events_per_s"] for r in rows),
        **{
            k: statistics.median(r[k] for r in rows)
            for k in ("redis_info_cpu_ms_per_event", "aof_bytes_per_event")
            if all(k in r for r in rows)
        },
        "cpu_ms_per_event": {
            role: statistics.median(r["cpu_ms_per_event"][role] for r in rows) for role in ROLES
        },
        "cpu_ms_per_event_all_processes": statistics.median(
            r["cpu_ms_per_event_all_processes"] for r in rows
        ),
        "load_average_1m_at_start": [r["load_average_1m_at_start"] for r in rows],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse arguments, run the rounds, print (and write) the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--old", type=Path, required=True, help="the tree to compare against")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--events", type=int, default=3_000, help="~25 KB mix events a run (0: none)")
    parser.add_argument("--small", type=int, default=10_000, help="~1.2 KB events a run (0: none)")
    parser.add_argument("--turn4k", type=int, default=0, help="~4 KB events a run (0: none)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--baseline", type=int, default=2_000, help="mix events of the SimpleWorker run a round (0: none)"
    )
    parser.add_argument("--write", action="store_true", help="write bench/results/<name>.json")
    parser.add_argument("--name", default="hotpath_ab", help="the results file's name (without .json)")
    args = parser.parse_args(argv)
    load = load_average()
    trees = {"old": args.old.resolve(), "new": ROOT}
    kinds = [
        (k, n) for k, n in (("mix", args.events), ("small", args.small), ("turn4k", args.turn4k)) if n > 0
    ]
    rounds: dict[str, dict[str, list[dict[str, Any]]]] = {k: {"old": [], "new": []} for k, _ in kinds}
    baselines: list[dict[str, Any]] = []
    for i in range(args.rounds):
        if args.baseline > 0:
            baselines.append(child(ROOT, _BASELINE, args.baseline, args.workers))
            print(f"round {i} baseline: {json.dumps(baselines[-1])}", flush=True)
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        for kind, n in kinds:
            for side in order:
                row = child_run(trees[side], kind, n, args.workers)
                rounds[kind][side].append(row)
                print(f"round {i} {kind} {side}: {json.dumps(row)}", flush=True)
    summary = {kind: {side: medians(rows) for side, rows in sides.items()} for kind, sides in rounds.items()}
    result = {
        "benchmark": args.name,
        "method": "same run, interleaved rounds (order alternates), medians; CPU from /proc per process "
        "and Redis's INFO cpu (used_cpu_sys + used_cpu_user)",
        "machine": machine(load),
        "versions": versions(),
        "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "rounds": rounds,
        "baselines": baselines,
        "summary": summary,
    }
    print(json.dumps(summary, indent=2))
    if args.write:
        print(write_result(args.name, result), flush=True)
    return result


if __name__ == "__main__":
    main()
