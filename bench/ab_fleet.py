"""One fleet run of the two-ref A/B, run by the python of the ref under test (``bench.hotpath_ab``).

Its source is passed to that python with ``-c`` (so nothing of this tree is importable there): it uses
only the standard library, redis-py, RQ and two names every compared tree has (``workers.counters.
read_counters`` and the ``fixmem`` command). Arguments: the events file (one JSON event per line), the
number of workers, the ``fixmem`` command's directory, the ``redis-server`` binary, a scratch directory.

The fleet is what an operator runs: one ``redis-server`` (AOF, fsync every second, as ``fixmem up`` runs
it; the same binary for both refs), ``fixmem ingest`` and ``fixmem worker`` × W. The clock and each
process's CPU (``/proc``: user + system) run from the moment the fleet is idle and ready (imports and
start-up excluded) to the moment the fleet counters account for every event. Prints one ``RESULT`` line.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis
from rq import Worker

from workers.counters import read_counters

TICK = os.sysconf("SC_CLK_TCK")
STREAM = "fixmem:turns"
CHUNK = 100


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(predicate, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> None:
    events_file, workers, fixmem_bin, redis_bin, scratch = sys.argv[1:6]
    n_workers = int(workers)
    events = Path(events_file).read_bytes().splitlines()
    data = Path(scratch)
    (data / "redis").mkdir(parents=True)
    port = free_port()
    server = subprocess.Popen(
        [redis_bin, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
         "--appendfsync", "everysec", "--auto-aof-rewrite-percentage", "0", "--dir", str(data / "redis"),
         "--logfile", str(data / "redis.log")],
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url, socket_timeout=300)

    def pinged() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    wait(pinged, "redis-server")
    env = {**os.environ, "FIXMEM_REDIS_URL": url, "FIXMEM_DATA_DIR": str(data / "store")}
    fixmem = str(Path(fixmem_bin) / "fixmem")
    procs = {"consumer": subprocess.Popen([fixmem, "ingest"], env=env, cwd=data)}
    for i in range(n_workers):
        procs[f"worker-{i}"] = subprocess.Popen([fixmem, "worker"], env=env, cwd=data)
    try:
        wait(lambda: Worker.count(connection=client) >= n_workers, "the workers")
        wait(lambda: bool(client.exists(STREAM)), "the consumer's group")
        pids = {role: p.pid for role, p in procs.items()} | {"redis": server.pid}
        info = client.info("cpu")
        redis_before = float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
        before = {role: cpu_seconds(pid) for role, pid in pids.items()}
        started = time.perf_counter()
        for start in range(0, len(events), CHUNK):
            with client.pipeline(transaction=False) as pipe:
                for raw in events[start : start + CHUNK]:
                    pipe.xadd(STREAM, {b"event": raw})
                pipe.execute()

        def handled() -> int:
            fleet = read_counters(client)
            return sum(fleet.events.values()) + sum(fleet.dead_letters.values())

        deadline = time.monotonic() + 1800
        while handled() < len(events):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                raise SystemExit("the fleet stopped or did not finish in 30 minutes")
            time.sleep(0.02)
        took = time.perf_counter() - started
        after = {role: cpu_seconds(pid) for role, pid in pids.items()}
        info = client.info("cpu")
        redis_after = float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
        fleet = read_counters(client)
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        server.kill()
        server.wait()
    cpu: dict[str, float] = {}
    for role, spent in after.items():
        key = "worker" if role.startswith("worker") else role
        cpu[key] = cpu.get(key, 0.0) + spent - before[role]
    print("RESULT " + json.dumps({
        "events": len(events),
        "mean_event_bytes": round(sum(map(len, events)) / len(events)),
        "seconds": round(took, 3),
        "events_per_s": round(len(events) / took, 1),
        "cpu_seconds": cpu,
        "redis_info_cpu_seconds": round(redis_after - redis_before, 3),
        "jobs": fleet.pipeline.get("jobs_done", 0),
        "events_by_result": dict(fleet.events),
        "load_average_1m_at_start": os.getloadavg()[0],
    }))  # fmt: skip


main()
