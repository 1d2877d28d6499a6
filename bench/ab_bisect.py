"""Find the commit that moved a pipeline figure: a binary search over first-parent history with the A/B fleet.

Run: ``python -m bench.ab_bisect --good OLD --bad NEW --figure cpu_ms_per_event.worker --threshold 0.75
[--events 5000] [--projects 200] [--runs 2] [--write]``.

Each probed commit is built like a ref of ``bench.hotpath_ab`` (its own venv, cached by commit) and runs
the same fleet ``--runs`` times, each run paired with a run of ``--good`` right before or after it (the
order alternates): the machine's load moves CPU per event by tens of percent, a pair shares it. A probe
is *bad* when the median of its ratios (probe / good) is above ``--threshold``. The search walks
``git rev-list --first-parent GOOD..BAD``; when the first bad commit is a merge, search again inside its
second parent's line. Writes ``bench/results/ab_bisect.json``: every probe with its figures, and the first
bad commit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.common import load_average, machine, write_result
from bench.hotpath_ab import figures, fleet_run, turn4k
from bench.refs import ROOT, built


def first_parent(good: str, bad: str) -> list[str]:
    """Commits after ``good`` up to ``bad`` on ``bad``'s first-parent line, oldest first."""
    out = subprocess.run(
        ["git", "rev-list", "--first-parent", "--reverse", f"{good}..{bad}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.split()


def subject(commit: str) -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%h %s", commit], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--good", required=True)
    parser.add_argument("--bad", required=True)
    parser.add_argument("--figure", default="cpu_ms_per_event.worker")
    parser.add_argument("--threshold", type=float, default=1.2, help="probe / good ratio that is bad")
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    load = load_average()
    home = Path(tempfile.mkdtemp(prefix="fixmem-bisect-"))
    events_file = home / "events.jsonl"
    events_file.write_bytes(b"\n".join(turn4k(i, args.projects) for i in range(args.events)) + b"\n")
    probes: dict[str, dict[str, Any]] = {}

    def bad(commit: str) -> bool:
        if commit not in probes:
            pairs = []
            for i in range(args.runs):
                sides = [("good", built(args.good)), ("probe", built(commit))]
                pair = {
                    s: figures(fleet_run(b, events_file, args.workers)) for s, b in sides[:: 1 - 2 * (i % 2)]
                }
                pairs.append(pair)
            ratio = statistics.median(p["probe"][args.figure] / p["good"][args.figure] for p in pairs)
            probes[commit] = {"subject": subject(commit), "ratio": round(ratio, 3), "pairs": pairs}
            print(f"{subject(commit)[:70]:70} {args.figure} ratio={ratio:.3f}", flush=True)
        return bool(probes[commit]["ratio"] > args.threshold)

    try:
        good, line = args.good, first_parent(args.good, args.bad)
        culprit = line[-1]
        while True:
            lo, hi = 0, len(line) - 1  # line[hi] is bad; find the first bad one
            if not bad(line[hi]):
                if good == args.good:
                    raise SystemExit(f"{line[hi]} is not bad at threshold {args.threshold}")
                break  # the merged branch alone is good: the merge itself is the culprit
            while lo < hi:
                mid = (lo + hi) // 2
                if bad(line[mid]):
                    hi = mid
                else:
                    lo = mid + 1
            culprit = line[lo]
            parents = subprocess.run(
                ["git", "rev-list", "--parents", "-n1", culprit], cwd=ROOT, capture_output=True, text=True,
                check=True,
            ).stdout.split()[1:]  # fmt: skip
            if len(parents) < 2:
                break
            good, line = parents[0], first_parent(parents[0], parents[1])  # a merge: search its branch
            if not line:
                break
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result = {
        "benchmark": "ab_bisect",
        "machine": machine(load),
        "parameters": vars(args),
        "first_bad": {"commit": culprit, "subject": subject(culprit)},
        "probes": probes,
    }
    print(json.dumps(result["first_bad"]))
    if args.write:
        print(write_result("ab_bisect", result), flush=True)
    return result


if __name__ == "__main__":
    main()
