"""Steady latency of two git refs in one run: ``bench.latency``'s window, alternating, compiled wheels.

Run: ``python -m bench.latency_ab --refs OLD NEW [--rounds 3] [--rate 535] [--seconds 30] [--write]
[--name latency_ab]``. Each ref is built as ``bench.hotpath_ab`` builds it (``bench.refs``: its wheel, with
the compiled core, in its own venv); each round runs one ``python -m bench.latency --repeat 1`` window per
ref on a fresh fleet of that ref's installed code (``FIXMEM_BENCH_FLEET=installed``, this tree's ``bench``),
the order alternating between rounds, so a change of the machine's load does not favour one side. The
result keeps every window's summary (``rounds``: probe p50 / p99, the load average before and after) and
each side's medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.backfill_bench import FLEET_ENV
from bench.common import load_average
from bench.hotpath_ab import alternating, finish
from bench.refs import Built, built

ROOT = Path(__file__).resolve().parent.parent


def window(subject: Built, rate: float, seconds: float) -> dict[str, Any]:
    """One ``bench.latency`` window of ``subject``'s installed fixmem; its summary."""
    with tempfile.TemporaryDirectory(prefix="fixmem-latab-") as scratch:
        home = Path(scratch)
        (home / "bench").symlink_to(ROOT / "bench")
        out = home / "out"
        run = subprocess.run(
            [str(subject.python), "-m", "bench.latency", "--rate", str(rate), "--seconds", str(seconds),
             "--repeat", "1", "--results", str(out)],
            cwd=home, env={**os.environ, FLEET_ENV: "installed", "PYTHONPATH": str(home)},
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if run.returncode != 0:
            raise SystemExit(f"latency window of {subject.ref} failed:\n{run.stderr[-4000:]}")
        result = json.loads((out / "latency_steady.json").read_text())
    summary: dict[str, Any] = result["summary"]["runs"][0]
    return summary | {"fleet": result["fleet"]}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per side: the windows' median probe p50 and p99, every p99, and how many met the 1 s goal (a
    window whose p99 is unknown, too many probes never seen, does not). Pure."""

    def median(rows: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(values) if values else None

    return {
        side: {
            "probe_p50_ms_median": median(rows, "probe_p50_ms"),
            "probe_p99_ms_median": median(rows, "probe_p99_ms"),
            "probe_p99_ms": [r.get("probe_p99_ms") for r in rows],
            "runs_meeting_goal": sum(
                1 for r in rows if r.get("probe_p99_ms") is not None and r["probe_p99_ms"] <= 1000
            ),
        }
        for side, rows in runs.items()
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse arguments, build both refs, run the alternating windows, print (and write) the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--refs", nargs=2, metavar=("OLD", "NEW"), required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=535.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--write", action="store_true", help="write bench/results/<name>.json")
    parser.add_argument("--name", default="latency_ab")
    args = parser.parse_args(argv)
    load = load_average()
    subjects = {"old": built(args.refs[0]), "new": built(args.refs[1])}
    runs = alternating(args.rounds, lambda side: window(subjects[side], args.rate, args.seconds))
    method = (
        "same run, alternating windows of python -m bench.latency --repeat 1, each ref's wheel (compiled "
        "core) in its own venv, a fresh fleet per window; probe p50/p99 per window"
    )
    return finish(args, method, load, subjects, runs, summarize(runs))


if __name__ == "__main__":
    main()
