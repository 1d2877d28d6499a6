"""Hook latency: the Claude Code hook as Claude Code runs it, one fresh process per event, spawn to exit.

A data directory holding one project of 500 entries (``bench.store_bench``) keyed, as in real use, by the
workspace's git ``origin`` (``FIXMEM_PROJECT`` unset: the hook computes ``project_key_for(cwd)`` once per
session). Sessions of three events in the documented payload shapes: ``UserPromptSubmit`` (a prompt of
``bench.store_bench.make_queries``), ``PostToolUse`` of ``Read`` on a file of the project, and
``PostToolUseFailure`` of ``Bash`` with an error output; every session its own, so nothing is skipped as
already seen (the recall runs each time). Wall and CPU (the hook process's user + system: the honest
figure on a shared machine) per event kind, with the 1-minute load average before and after each mode.
Modes (``rows``):

- ``remote``: the installed command (``fixmem install claude-code``: ``python -S …/fixmem/hooks/__main__.py``)
  with ``FIXMEM_API_URL``/``FIXMEM_API_TOKEN`` against a ``fixmem serve`` over the same directory;
- ``local``: the installed command reading the data directory through its warm recall daemon (started
  once before the timed runs; its CPU per request is measured from ``/proc`` and reported beside);
- ``remote_site``: ``fixmem-hook`` (the console script: ``site`` and this checkout's editable-install
  finder are loaded) against the same server, to show what ``-S`` saves;
- ``local_in_process``: the installed command with the daemon off (``FIXMEM_HOOK_DAEMON_IDLE_SECONDS=0``):
  each hook imports the store and parses the log (fewer runs: ~1 s each).

Also: a local cold start (no daemon: a prompt hook starts one and waits for its answer; a tool hook starts
it and answers nothing), the modules a hook imports (``-X importtime``), and the ``fixmem.hooks.harness``
adapter's overhead per turn in-process (``before_task`` + ``on_file`` + ``on_error``), local and remote.
The fast path's modules are byte-compiled first, as ``pip install`` does (this environment sets
``PYTHONDONTWRITEBYTECODE``: without it every hook would compile them, ~30 ms).

Goal (the hooks issue): p99 <= 150 ms for the prompt and tool hooks. ``python -m bench.hooks [--runs N]``
(sessions per mode; default 200, i.e. 200 invocations per event kind) writes ``bench/results/hooks.json``.
"""

from __future__ import annotations

import compileall
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, load_average, percentile, run_main, serving
from bench.startup import children_cpu

GOAL_P99_MS = 150.0
RUNS = 200
IN_PROCESS_RUNS = 20
COLD_RUNS = 5
ENTRIES = 500
TOKEN = "bench-hook-token-0123456789abcdef"
ORIGIN = "https://github.com/bench/app.git"
KINDS = ("UserPromptSubmit", "PostToolUse:Read", "PostToolUseFailure:Bash")
HEAVY = ("numpy", "pydantic", "store", "typing", "dataclasses", "pathlib", "urllib", "ssl", "email")


def installed_command() -> list[str]:
    """The command ``fixmem install claude-code`` writes (its argv)."""
    from fixmem.hooks.install import hook_command  # noqa: PLC0415

    return shlex.split(hook_command())


def workspace(root: Path) -> Path:
    """A checkout (a ``.git/config`` with an ``origin``: ``project_key_for`` reads files only)."""
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {ORIGIN}\n')
    return root


def populate(data_dir: Path, project: str) -> None:
    from bench.store_bench import OWNER, make_entries  # noqa: PLC0415
    from store import FixStore  # noqa: PLC0415

    store = FixStore(data_dir, cap=ENTRIES)
    entries = [e.model_copy(update={"project": project}) for e in make_entries(ENTRIES)]
    for i in range(0, ENTRIES, 100):
        store.append(OWNER, project, entries[i : i + 100])


def sessions(count: int, mode: str, cwd: Path) -> list[list[tuple[str, bytes]]]:
    """``count`` sessions of three payloads (prompt, file read, failed command), each with its kind."""
    from bench.store_bench import make_entries, make_queries  # noqa: PLC0415

    queries = make_queries(count)
    entries = make_entries(count, seed=3)
    out = []
    for i in range(count):
        common = {"session_id": f"bench-{mode}-{i}", "transcript_path": "/dev/null", "cwd": str(cwd)}
        path = str(cwd / entries[i].files[0])
        error = entries[i].errors[0] if entries[i].errors else "AssertionError: expected 3, got 4"
        bodies = [
            {**common, "hook_event_name": "UserPromptSubmit", "prompt": queries[i]["query"]},
            {
                **common,
                "hook_event_name": "PostToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": path},
                "tool_response": {"type": "text", "file": {"filePath": path}},
            },
            {
                **common,
                "hook_event_name": "PostToolUseFailure",
                "tool_name": "Bash",
                "tool_input": {"command": "pytest -q"},
                "error": f"Exit code 1\n{error}",
            },
        ]
        out.append([(kind, json.dumps(b).encode()) for kind, b in zip(KINDS, bodies, strict=True)])
    return out


def invoke(argv: list[str], env: dict[str, str], body: bytes, cwd: Path) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one hook process, and what it printed; raises if it failed."""
    cpu_before = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, input=body, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"hook exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed, children_cpu() - cpu_before, done.stdout


def summary(wall: list[float], cpu: list[float], injected: int) -> dict[str, Any]:
    return {
        "runs": len(wall),
        "injected_runs": injected,
        "p50_ms": round(percentile(wall, 50) * 1000, 1),
        "p99_ms": round(percentile(wall, 99) * 1000, 1),
        "max_ms": round(max(wall) * 1000, 1),
        "cpu_p50_ms": round(percentile(cpu, 50) * 1000, 1),
        "cpu_p99_ms": round(percentile(cpu, 99) * 1000, 1),
        "goal_met": percentile(wall, 99) * 1000 <= GOAL_P99_MS,
        "cpu_within_goal": percentile(cpu, 99) * 1000 <= GOAL_P99_MS,
    }


def time_mode(argv: list[str], env: dict[str, str], runs: int, mode: str, cwd: Path) -> dict[str, Any]:
    """Every session's three hooks in turn (after one unmeasured session); p50/p99 per event kind."""
    walls: dict[str, list[float]] = {k: [] for k in KINDS}
    cpus: dict[str, list[float]] = {k: [] for k in KINDS}
    injected = dict.fromkeys(KINDS, 0)
    load_before = load_average()
    for n, session in enumerate(sessions(runs + 1, mode, cwd)):
        for kind, body in session:
            wall, cpu, out = invoke(argv, env, body, cwd)
            if n:
                walls[kind].append(wall)
                cpus[kind].append(cpu)
                injected[kind] += bool(out.strip())
    everything = [w for k in KINDS for w in walls[k]]
    return {
        "command": " ".join(argv),
        "load_average_1m": {"before": load_before, "after": load_average()},
        "all": summary(everything, [c for k in KINDS for c in cpus[k]], sum(injected.values())),
        "by_event": {k: summary(walls[k], cpus[k], injected[k]) for k in KINDS},
    }


def process_cpu(pid: int) -> float:
    """User + system seconds of a running process (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_pid(data_dir: Path) -> int | None:
    from fixmem.hooks.daemon_client import LOCK_NAME, daemon_running  # noqa: PLC0415

    hooks_dir = data_dir / "hooks"
    if not daemon_running(str(hooks_dir)):
        return None
    written = (hooks_dir / LOCK_NAME).read_text().split()  # empty while the daemon writes it
    return int(written[0]) if written else None


def stop_daemon(data_dir: Path) -> None:
    pid = daemon_pid(data_dir)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while daemon_pid(data_dir) is not None and time.monotonic() < deadline:
            time.sleep(0.05)


def wait_daemon(data_dir: Path) -> int:
    """The pid of the data directory's daemon once it answers."""
    from fixmem.hooks.daemon_client import connect  # noqa: PLC0415

    deadline = time.monotonic() + 60
    while True:
        pid = daemon_pid(data_dir)
        try:
            connect(str(data_dir / "hooks" / "recall.sock"), 1.0).close()
        except OSError:
            pid = None
        if pid is not None:
            return pid
        if time.monotonic() > deadline:
            raise RuntimeError("the recall daemon did not start")
        time.sleep(0.05)


def cold_starts(argv: list[str], env: dict[str, str], data_dir: Path, cwd: Path, runs: int) -> dict[str, Any]:
    """Wall of a prompt hook and of a tool hook that find no daemon (it is stopped before each)."""
    out: dict[str, Any] = {}
    for kind, index in (("UserPromptSubmit", 0), ("PostToolUseFailure:Bash", 2)):
        walls, answered = [], 0
        for session in sessions(runs, f"cold-{index}", cwd):
            stop_daemon(data_dir)
            wall, _, printed = invoke(argv, env, session[index][1], cwd)
            walls.append(wall)
            answered += bool(printed.strip())
            wait_daemon(data_dir)
        out[kind] = {
            "runs": len(walls),
            "answered_runs": answered,
            "p50_ms": round(percentile(walls, 50) * 1000, 1),
            "max_ms": round(max(walls) * 1000, 1),
        }
    return out


def imported(argv: list[str], env: dict[str, str], body: bytes, cwd: Path) -> dict[str, Any]:
    """The modules one hook process imports (``-X importtime``) and the heavy ones among them."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        input=body,
        env=env,
        cwd=cwd,
        capture_output=True,
        check=True,
    )
    names = [line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines() if "|" in line]
    names = [n for n in names if n != "imported package"]
    heavy = sorted({n for n in names if n.split(".")[0] in HEAVY})
    return {"modules": len(names), "heavy": heavy}


def adapter_overhead(data_dir: Path, base: str, owner: str, project: str, turns: int) -> dict[str, Any]:
    """Seconds per turn of ``before_task`` + ``on_file`` + ``on_error`` in-process, local and remote: one
    adapter (as in one agent process), a new session each turn (nothing skipped as already shown)."""
    from bench.store_bench import make_entries, make_queries  # noqa: PLC0415
    from fixmem.hooks.harness import Harness  # noqa: PLC0415

    queries = make_queries(turns)
    entries = make_entries(turns, seed=5)
    out: dict[str, Any] = {}
    for mode, env in {
        "local": {"FIXMEM_DATA_DIR": str(data_dir)},
        "remote": {"FIXMEM_API_URL": base, "FIXMEM_API_TOKEN": TOKEN, "FIXMEM_DATA_DIR": str(data_dir)},
    }.items():
        seconds: list[float] = []
        harness = Harness.from_env({**env, "FIXMEM_OWNER": owner, "FIXMEM_PROJECT": project})
        for i in range(turns + 1):
            harness.session = f"bench-adapter-{mode}-{i}"  # one agent process, a new task each turn
            started = time.perf_counter()
            harness.before_task(queries[i % turns]["query"])
            harness.on_file(entries[i % turns].files[0])
            harness.on_error(entries[i % turns].errors[0] if entries[i % turns].errors else "E failed")
            if i:  # the first turn loads the store (local) or opens the connection (remote)
                seconds.append(time.perf_counter() - started)
        out[mode] = {
            "turns": len(seconds),
            "p50_ms": round(percentile(seconds, 50) * 1000, 2),
            "p99_ms": round(percentile(seconds, 99) * 1000, 2),
        }
    return out


def run(runs: int = RUNS) -> dict[str, Any]:
    """Time the hook in each mode; p50/p99 wall and CPU per event kind, cold starts, imports, adapter."""
    from bench.store_bench import OWNER  # noqa: PLC0415
    from ingest.project_key import project_key_for  # noqa: PLC0415

    for package in ("fixmem", "store", "ingest", "workers"):  # as pip install does
        compileall.compile_dir(str(ROOT / package), quiet=1)
    installed = installed_command()
    script = [str(Path(sys.executable).with_name("fixmem-hook")), "claude-code"]
    with tempfile.TemporaryDirectory(prefix="fixmem-hooks-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        cwd = workspace(Path(tmp) / "app")
        project = project_key_for(str(cwd))
        populate(data_dir, project)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
        local = {**base_env, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_OWNER": OWNER}
        rows: dict[str, Any] = {}
        probe = sessions(1, "probe", cwd)[0][0][1]
        imports: dict[str, Any] = {}
        try:
            invoke(installed, {**local, "FIXMEM_HOOK_COLD_WAIT_SECONDS": "60"}, probe, cwd)  # starts it
            pid = wait_daemon(data_dir)
            imports["local"] = imported(installed, local, probe, cwd)
            cpu_before = process_cpu(pid)
            rows["local"] = time_mode(installed, local, runs, "local", cwd)
            requests = 3 * (runs + 1)
            rows["local"]["daemon_cpu_ms_per_request"] = round(
                (process_cpu(pid) - cpu_before) / requests * 1000, 2
            )
            cold_env = {**local, "FIXMEM_HOOK_COLD_WAIT_SECONDS": "60"}
            cold = cold_starts(installed, cold_env, data_dir, cwd, min(COLD_RUNS, runs))
        finally:
            stop_daemon(data_dir)
        no_daemon = {**local, "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "0"}
        in_process_runs = min(IN_PROCESS_RUNS, runs)
        rows["local_in_process"] = time_mode(installed, no_daemon, in_process_runs, "inproc", cwd)
        with serving(data_dir, f"{TOKEN}:{OWNER}") as base:
            remote = {**local, "FIXMEM_API_URL": base, "FIXMEM_API_TOKEN": TOKEN}
            imports["remote"] = imported(installed, remote, probe, cwd)
            rows["remote"] = time_mode(installed, remote, runs, "remote", cwd)
            if Path(script[0]).is_file():
                rows["remote_site"] = time_mode(script, remote, min(runs, 50), "remote_site", cwd)
            adapter = adapter_overhead(data_dir, base, OWNER, project, min(runs, 50))
    goal = {mode: all(rows[mode]["by_event"][k]["goal_met"] for k in KINDS) for mode in ("local", "remote")}
    return {
        "commands": {"installed": " ".join(installed), "script": " ".join(script)},
        "summary": {
            "rows": rows,
            "cold_start_local": cold,
            "imports": imports,
            "adapter_per_turn": adapter,
            "goal_p99_ms": GOAL_P99_MS,
            "goal_met_local": goal["local"],
            "goal_met_remote": goal["remote"],
        },
    }


main = run_main("hooks", __doc__, run, runs=RUNS, what="mode (sessions of 3 hooks)", entries=ENTRIES)
"""Run the benchmark, print its summary, write ``bench/results/hooks.json``."""


if __name__ == "__main__":
    main()
