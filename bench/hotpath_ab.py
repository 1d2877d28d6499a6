"""End-to-end A/B of two git refs in one run: events/s and CPU per event by role, alternating rounds.

Run: ``python -m bench.hotpath_ab --refs OLD NEW [--rounds 6] [--events 20000] [--projects 200]
[--workers 2] [--write] [--name hotpath_ab]``. ``NEW`` may be ``WORKTREE`` (the checkout as it is on disk).

Each ref is built once (``bench.refs``: ``git archive`` of the commit and a venv with the package
installed from it as a user installs it) and each round runs the same fleet for both refs, the order
alternating between rounds so a change of the machine's load does not favour one side
(``bench/ab_fleet.py``: one ``redis-server`` — the same binary for both — ``fixmem ingest`` and ``fixmem
worker`` × W, each ref's own commands). The events are the same bytes for both: ``--events`` ~4 KB turns
(a small realistic turn, ``bench.pipeline_bench.make_event``, whose agent first read a ~2.9 KB file) over
``--projects`` projects, written once to a file.

Per figure the result gives each ref's median and range over rounds, the change (new / old - 1) of the
medians, the paired changes (each round's new against the same round's old) and ``beyond_spread``: every
paired change has the same sign and the medians' change is larger than either side's spread (max - min
over its median). Figures: events/s end to end; CPU ms per event of the consumer, the workers (summed)
and Redis (its own ``INFO cpu``); and all processes together.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.common import load_average, machine, versions, write_result
from bench.pipeline_bench import make_event
from bench.refs import Built, built
from fixmem.runtime.redis_server import redis_server_binary

ROOT = Path(__file__).resolve().parent.parent
FLEET = (ROOT / "bench" / "ab_fleet.py").read_text()
ROLES = ("consumer", "worker", "redis")


def turn4k(i: int, projects: int) -> bytes:
    """A small realistic turn whose agent first read a ~2.9 KB file: ~4 KB on the wire."""
    event = orjson.loads(make_event(i, projects))
    line = "    value_{i}_{k} = compute(data, key={k!r}, default=None)  # line {k}\n"
    code = "".join(line.format(i=i, k=k) for k in range(40))
    read = {"tool": "bash", "input": {"command": f"sed -n 1,40p src/app/mod{i % 7}.py"}, "output": code,
            "exit_code": 0}  # fmt: skip
    event["tool_events"].insert(0, read)
    return orjson.dumps(event)


def fleet_run(subject: Built, events_file: Path, workers: int) -> dict[str, Any]:
    """One fleet run of ``subject`` over the events in ``events_file``; its figures per event."""
    with tempfile.TemporaryDirectory(prefix="fixmem-ab-") as scratch:
        out = subprocess.run(
            [str(subject.python), "-c", FLEET, str(events_file), str(workers), str(subject.bin),
             redis_server_binary(), str(Path(scratch) / "fleet")],
            cwd=scratch, env={**os.environ, "PYTHONPATH": ""}, capture_output=True, text=True, check=False,
        )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"fleet run of {subject.ref} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    run: dict[str, Any] = json.loads(line[len("RESULT ") :])
    n = run["events"]
    cpu = run.pop("cpu_seconds")
    by_role = {role: round(1000 * cpu.get(role, 0.0) / n, 4) for role in ROLES}
    return {
        **run,
        "cpu_ms_per_event": by_role,
        "cpu_ms_per_event_all": round(sum(by_role.values()), 4),
        "redis_info_cpu_ms_per_event": round(1000 * run.pop("redis_info_cpu_seconds") / n, 4),
    }


def figures(row: dict[str, Any]) -> dict[str, float]:
    """The compared figures of one run, flat."""
    return {
        "events_per_s": row["events_per_s"],
        **{f"cpu_ms_per_event.{role}": row["cpu_ms_per_event"][role] for role in ROLES},
        "cpu_ms_per_event.all": row["cpu_ms_per_event_all"],
        "redis_info_cpu_ms_per_event": row["redis_info_cpu_ms_per_event"],
    }


def compare(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any]:
    """Per figure: medians, ranges, the medians' change, paired changes and whether it beats the spread."""
    out: dict[str, Any] = {}
    for name in figures(old[0]):
        a = [figures(r)[name] for r in old]
        b = [figures(r)[name] for r in new]
        ma, mb = statistics.median(a), statistics.median(b)
        change = mb / ma - 1 if ma else 0.0
        paired = [y / x - 1 for x, y in zip(a, b, strict=True) if x]
        spread = max((max(a) - min(a)) / ma if ma else 0.0, (max(b) - min(b)) / mb if mb else 0.0)
        same_sign = all(p > 0 for p in paired) or all(p < 0 for p in paired)
        out[name] = {
            "old_median": round(ma, 4), "old_range": [min(a), max(a)],
            "new_median": round(mb, 4), "new_range": [min(b), max(b)],
            "change": round(change, 4), "paired_changes": [round(p, 4) for p in paired],
            "spread": round(spread, 4), "beyond_spread": same_sign and abs(change) > spread,
        }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse arguments, build both refs, run the rounds, print (and write) the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--refs", nargs=2, metavar=("OLD", "NEW"), required=True)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write bench/results/<name>.json")
    parser.add_argument("--name", default="hotpath_ab", help="the results file's name (without .json)")
    args = parser.parse_args(argv)
    load = load_average()
    subjects = {"old": built(args.refs[0]), "new": built(args.refs[1])}
    home = Path(tempfile.mkdtemp(prefix="fixmem-ab-events-"))
    events_file = home / "events.jsonl"
    events_file.write_bytes(b"\n".join(turn4k(i, args.projects) for i in range(args.events)) + b"\n")
    try:
        rounds = alternating(
            args.rounds, lambda side: fleet_run(subjects[side], events_file, args.workers), show=figures
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    method = (
        "same run, alternating rounds; each ref built from git into its own venv; a fleet of redis-server + "
        "fixmem ingest + fixmem worker x W per run; CPU from /proc per process, Redis's from INFO cpu; "
        "medians and ranges over rounds"
    )
    return finish(args, method, load, subjects, rounds, compare(rounds["old"], rounds["new"]))


def alternating(
    rounds: int, run: Callable[[str], dict[str, Any]], *, show: Callable[[dict[str, Any]], object] = dict
) -> dict[str, list[dict[str, Any]]]:
    """``run("old")`` and ``run("new")`` once a round, the order alternating; each side's rows in order."""
    rows: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for i in range(rounds):
        for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
            rows[side].append(run(side))
            print(f"round {i} {side}: {json.dumps(show(rows[side][-1]))}", flush=True)
    return rows


def finish(
    args: argparse.Namespace,
    method: str,
    load: float,
    subjects: dict[str, Built],
    rounds: dict[str, list[dict[str, Any]]],
    summary: dict[str, Any],
) -> dict[str, Any]:
    """An A/B's result: how it ran, the machine, both refs, every round and the summary; printed, and
    written to ``bench/results/<args.name>.json`` with ``args.write``."""
    result = {
        "benchmark": args.name,
        "method": method,
        "machine": machine(load),
        "versions": versions(),
        "refs": {side: {"ref": s.ref, "commit": s.commit} for side, s in subjects.items()},
        "parameters": vars(args),
        "rounds": rounds,
        "summary": summary,
    }
    print(json.dumps(summary, indent=2))
    if args.write:
        print(write_result(args.name, result), flush=True)
    return result


if __name__ == "__main__":
    main()
