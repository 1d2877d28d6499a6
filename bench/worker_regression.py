"""Where one tree's worker spends more than another's: the same jobs, in process, counted call by call.

Run: ``python -m bench.worker_regression --old-python OLD/bin/python --new-python NEW/bin/python
[--events 4000] [--warm 2000] [--projects 200] [--write]``. Each python is a venv with a tree installed
*editable* (pure: mypyc would hide the calls). One fixed events file of ``bench.hotpath_ab.turn4k`` turns
is written once and fed to both: in each venv, ``DRIVER`` (below, run with that venv's python and none of
this tree on the path) XADDs them to a private embedded Redis, cuts jobs with that tree's own ``Consumer``
(its settings, a backlog), runs ``--warm`` events' jobs untimed, then ``run_batch`` on the timed jobs
twice over fresh state: once plain (``process_time``), once under cProfile. Python-level call counts do
not move with the machine's load, the times do; both are per event. The result compares the trees per
function (path inside the tree, name): own calls and own time, and the cumulative time of the worker's
top-level steps. Writes ``bench/results/worker_regression.json``.
"""

from __future__ import annotations

import argparse
import json
import pstats
import statistics
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import RESULTS, load_average, machine, write_result
from bench.hotpath_ab import turn4k

DRIVER = r"""
import dataclasses, json, shutil, sys, tempfile, time, cProfile
from pathlib import Path
import redis
from rq.job import Job
from rq.serializers import JSONSerializer
try:
    from fixmem.runtime.redis_server import EmbeddedRedis
except ImportError:
    from fixmem.redis_server import EmbeddedRedis
from fixmem import wiring
from fixmem.settings import Settings
from ingest.consumer import Consumer
import workers.jobs

events_file, warm, profile_out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
events = Path(events_file).read_bytes().splitlines()

def jobs(client, settings, batch):
    with client.pipeline(transaction=False) as pipe:
        for raw in batch:
            pipe.xadd(settings.stream, {b"event": raw})
        pipe.execute()
    config = dataclasses.replace(wiring.consumer_config(settings, name="r"), read_block_ms=1,
                                 backpressure_jobs=10**9)
    Consumer(client, config).run(burst=True)
    queue = f"rq:queue:{config.routes[0].queue}"
    ids = [j.decode() for j in client.lrange(queue, 0, -1)]
    client.delete(queue)
    return [Job.fetch(j, connection=client, serializer=JSONSerializer).args[0] for j in ids]

def once(profiler):
    tmp = Path(tempfile.mkdtemp(prefix="fixmem-wreg-"))
    server = EmbeddedRedis(data_dir=tmp / "redis")
    try:
        client = redis.Redis.from_url(server.start(), socket_timeout=300)
        settings = Settings.from_env({"FIXMEM_DATA_DIR": str(tmp / "data"), "HOME": str(tmp)})
        context = wiring.worker_context(settings, client)
        for batch_id in jobs(client, settings, events[:warm]):
            workers.jobs.run_batch(context, batch_id)
        timed = jobs(client, settings, events[warm:])
        started = time.process_time()
        if profiler is not None:
            profiler.enable()
        for batch_id in timed:
            workers.jobs.run_batch(context, batch_id)
        if profiler is not None:
            profiler.disable()
        return len(timed), time.process_time() - started
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

n_jobs, plain = once(None)
profiler = cProfile.Profile()
_, profiled = once(profiler)
profiler.dump_stats(profile_out)
root = str(Path(workers.__file__).resolve().parent.parent)
print("RESULT " + json.dumps({"jobs": n_jobs, "plain_cpu_seconds": plain, "profiled_cpu_seconds": profiled,
                              "root": root}))
"""

EXTRACT = r"""
import cProfile, json, pstats, sys, time
from ingest.schema import parse_event
from workers.extraction import extract
events = [parse_event(raw) for raw in open(sys.argv[1], "rb").read().splitlines()]
best = float("inf")
for _ in range(int(sys.argv[2])):
    started = time.process_time()
    for event in events:
        extract(event)
    best = min(best, time.process_time() - started)
profiler = cProfile.Profile()
profiler.enable()
for event in events:
    extract(event)
profiler.disable()
stats = pstats.Stats(profiler).stats
calls = sum(nc for (_, _, _), (_, nc, _, _, _) in stats.items())
tops = {}
for (file, _, func), (_, _, _, cumulative, _) in stats.items():
    if func in TOPS and file.endswith(TOPS[func]):
        tops[func] = 1000 * cumulative / len(events)
print("RESULT " + json.dumps({"cpu_ms_per_event": 1000 * best / len(events), "python_calls_per_event":
                              calls / len(events), "profiled_cumulative_ms_per_event": tops}))
"""

# extract's own steps (by name: whichever a tree has), each in the module its path ends with.
EXTRACT_STEPS = {
    "collect_errors": "turn.py",
    "collect_files": "files.py",
    "summarize_changes": "changes.py",
    "last_run": "outcome.py",
    "decide_run": "outcome.py",
    "classify": "calls.py",
    "tags_for": "solution.py",
}


def extraction_tree(python: str, tree: str, events_file: Path, repeat: int) -> dict[str, Any]:
    """``extract`` alone on ``events_file`` with ``tree`` first on the path: best plain CPU per event of
    ``repeat`` passes, Python calls per event and extract's steps' cumulative time under cProfile."""
    code = EXTRACT.replace("TOPS", repr(EXTRACT_STEPS))
    out = subprocess.run(
        [python, "-c", code, str(events_file), str(repeat)], cwd=events_file.parent,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": tree}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"extraction of {tree} failed:\n{out.stderr[-4000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}


# The worker's top-level steps, as (path inside the tree ends with, function name); whichever exist in a tree.
STEPS: tuple[tuple[str, str, str], ...] = (
    ("run_batch", "workers/jobs.py", "run_batch"),
    ("read_events", "workers/jobs.py", "read_events"),
    ("decide", "workers/jobs.py", "decide"),
    ("validation", "ingest/schema.py", "parse_any"),
    ("extraction", "workers/turn.py", "extract"),
    ("extraction/collect_errors", "workers/turn.py", "collect_errors"),
    ("extraction/collect_files", "workers/files.py", "collect_files"),
    ("extraction/summarize_changes", "workers/changes.py", "summarize_changes"),
    ("extraction/outcome_run", "workers/outcome.py", "last_run"),
    ("extraction/outcome_run", "workers/outcome.py", "decide_run"),
    ("append/store_append", "store/api.py", "append"),
    ("append/store_append", "store/appending.py", "append"),
    ("present_before", "workers/jobs.py", "_present_before"),
    ("present_before", "workers/jobs.py", "present_before"),
    ("append", "workers/jobs.py", "_append"),
    ("commit", "workers/jobs.py", "_commit"),
    ("tally", "workers/jobs.py", "tally"),
)


def run_tree(
    python: str, tree: str, events_file: Path, warm: int, scratch: Path, label: str
) -> dict[str, Any]:
    """Run ``DRIVER`` with ``python`` (``tree``: a source tree first on its path, or ""); its figures and
    its profile's stats."""
    prof = scratch / f"{label}.prof"
    out = subprocess.run(
        [python, "-c", DRIVER, str(events_file), str(warm), str(prof)],
        cwd=scratch, env={"PATH": "/usr/bin:/bin", "HOME": str(scratch), "PYTHONPATH": tree},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"{label} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    run: dict[str, Any] = json.loads(line[len("RESULT ") :])
    run["stats"] = pstats.Stats(str(prof)).stats  # type: ignore[attr-defined]
    return run


def by_function(run: dict[str, Any]) -> dict[str, tuple[int, float, float]]:
    """Per ``path:function`` (path inside the tree): (calls, own seconds, cumulative seconds)."""
    root = run["root"].rstrip("/") + "/"
    table: dict[str, tuple[int, float, float]] = {}
    for (file, _, func), (_, calls, own, cumulative, _) in run["stats"].items():
        key = (
            f"{_inside(file.removeprefix(root))}:{func}"
            if file.startswith(root)
            else f"{_outside(file)}:{func}"
        )
        old = table.get(key, (0, 0.0, 0.0))
        table[key] = (old[0] + calls, old[1] + own, max(old[2], cumulative))
    return table


def by_package(table: dict[str, tuple[int, float, float]]) -> dict[str, tuple[int, float]]:
    """Own calls and own seconds summed per top-level package (``~name``: outside the tree; ``~~``: the
    interpreter's built-ins)."""
    calls: Counter[str] = Counter()
    own: dict[str, float] = {}
    for key, (n, tt, _) in table.items():
        package = key.split(":")[0] if key.startswith("~") else key.split("/")[0].split(":")[0]
        calls[package] += n
        own[package] = own.get(package, 0.0) + tt
    return {p: (calls[p], own[p]) for p in calls}


def _inside(path: str) -> str:
    """``package/.../module.py`` as ``package/module.py``: modules moved into subpackages still match."""
    parts = path.split("/")
    return f"{parts[0]}/{parts[-1]}" if len(parts) > 1 else path


def _outside(file: str) -> str:
    """A name for a file outside the tree: its site-packages package, or the file's name."""
    if "site-packages/" in file:
        return "~" + file.split("site-packages/", 1)[1].split("/", 1)[0]
    return "~" + Path(file).name


def per_event(run: dict[str, Any], events: int) -> dict[str, Any]:
    """One tree's figures per event: CPU (plain and profiled), calls, steps, packages, functions."""
    table = by_function(run)
    steps: dict[str, float] = {}
    for step, path, name in STEPS:
        key = f"{path}:{name}"
        if key in table:
            steps[step] = steps.get(step, 0.0) + round(1000 * table[key][2] / events, 4)
    return {
        "tree": run["root"],
        "jobs": run["jobs"],
        "cpu_ms_per_event_plain": round(1000 * run["plain_cpu_seconds"] / events, 4),
        "cpu_ms_per_event_profiled": round(1000 * run["profiled_cpu_seconds"] / events, 4),
        "python_calls_per_event": round(sum(n for n, _, _ in table.values()) / events, 1),
        "steps_cumulative_ms_per_event": steps,
        "packages": {
            p: {"calls_per_event": round(n / events, 1), "own_ms_per_event": round(1000 * tt / events, 4)}
            for p, (n, tt) in sorted(by_package(table).items(), key=lambda kv: -kv[1][1])
        },
        "table": table,
    }


def compare(old: dict[str, Any], new: dict[str, Any], events: int, top: int) -> list[dict[str, Any]]:
    """The ``top`` functions whose own time per event grew most from ``old`` to ``new`` (with call counts)."""
    rows = []
    for key in set(old["table"]) | set(new["table"]):
        a, b = old["table"].get(key, (0, 0.0, 0.0)), new["table"].get(key, (0, 0.0, 0.0))
        rows.append({
            "function": key,
            "calls_per_event": [round(a[0] / events, 2), round(b[0] / events, 2)],
            "own_ms_per_event": [round(1000 * a[1] / events, 4), round(1000 * b[1] / events, 4)],
            "cumulative_ms_per_event": [round(1000 * a[2] / events, 4), round(1000 * b[2] / events, 4)],
            "own_ms_delta": round(1000 * (b[1] - a[1]) / events, 4),
        })  # fmt: skip
    rows.sort(key=lambda r: -abs(r["own_ms_delta"]))
    return rows[:top]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse arguments, run both trees, print and (with ``--write``) write the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--old-python", required=True, help="python of a venv with the old tree, editable")
    parser.add_argument("--new-python", required=True, help="python of a venv with the new tree, editable")
    parser.add_argument("--old-tree", default="", help="a source tree put first on the old python's path")
    parser.add_argument("--new-tree", default="", help="a source tree put first on the new python's path")
    parser.add_argument("--old-label", default="old")
    parser.add_argument("--new-label", default="new")
    parser.add_argument("--events", type=int, default=4_000, help="events timed")
    parser.add_argument("--warm", type=int, default=2_000, help="events processed first, not timed")
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--top", type=int, default=40, help="functions listed")
    parser.add_argument(
        "--extraction-trees", nargs="*", default=[], metavar="LABEL=DIR",
        help="source trees (git worktrees) whose extract alone is measured with --old-python, alternating",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the extraction trees")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    load = load_average()
    with tempfile.TemporaryDirectory(prefix="fixmem-wreg-") as scratch_dir:
        scratch = Path(scratch_dir)
        events_file = scratch / "events.jsonl"
        events_file.write_bytes(b"\n".join(turn4k(i, args.projects) for i in range(args.warm + args.events)))
        old = per_event(
            run_tree(args.old_python, args.old_tree, events_file, args.warm, scratch, "old"), args.events
        )
        new = per_event(
            run_tree(args.new_python, args.new_tree, events_file, args.warm, scratch, "new"), args.events
        )
        timed_file = scratch / "timed.jsonl"
        timed_file.write_bytes(b"\n".join(events_file.read_bytes().splitlines()[args.warm :]))
        trees = dict(pair.split("=", 1) for pair in args.extraction_trees)
        rounds: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                rounds[label].append(extraction_tree(args.old_python, tree, timed_file, 3))
    extraction = {
        label: {
            "cpu_ms_per_event_median": round(statistics.median(r["cpu_ms_per_event"] for r in runs), 4),
            "cpu_ms_per_event_runs": [r["cpu_ms_per_event"] for r in runs],
            "python_calls_per_event": runs[0]["python_calls_per_event"],
            "profiled_cumulative_ms_per_event": {
                k: round(v, 4) for k, v in runs[0]["profiled_cumulative_ms_per_event"].items()
            },
        }
        for label, runs in rounds.items()
    }
    for label, figures in extraction.items():
        print(f"extract {label}: {figures}")
    functions = compare(old, new, args.events, args.top)
    for side in (old, new):
        del side["table"]
    summary = {
        args.old_label: old,
        args.new_label: new,
        "extraction_alone": extraction,
        "functions_by_own_time_delta": functions,
    }
    for label, side in ((args.old_label, old), (args.new_label, new)):
        print(
            f"{label}: {side['cpu_ms_per_event_plain']} ms/event plain, "
            f"{side['python_calls_per_event']} calls/event, {side['jobs']} jobs; "
            f"steps {side['steps_cumulative_ms_per_event']}"
        )
    for row in functions[:25]:
        print(
            f"{row['own_ms_delta']:+.4f}  {row['function']}  calls {row['calls_per_event']}"
            f"  own {row['own_ms_per_event']}  cum {row['cumulative_ms_per_event']}"
        )
    result = {
        "benchmark": "worker_regression",
        "method": "run_batch in one process on the same ~4 KB turns cut into jobs by each tree's own "
        "Consumer; pure (editable) builds; CPU per event plain, then calls and times under cProfile",
        "machine": machine(load),
        "parameters": {k: v for k, v in vars(args).items() if k != "write"},
        "summary": summary,
    }
    if args.write:
        print(write_result("worker_regression", result, directory=RESULTS), flush=True)
    return result


if __name__ == "__main__":
    main()
