"""What every benchmark of the suite shares: machine facts, result files, percentiles, process watching.

A result file ``bench/results/<name>.json`` holds ``machine`` (CPU, load average before and after, Python,
platform), ``versions`` (fixmem's commit, redis-server, the libraries), ``parameters``, ``samples`` (the
raw measurements) and ``summary`` (the figures the table in docs/benchmarks.md shows), plus ``goals`` when
the issue set one. The machine is shared: the load average is recorded, and per-core rates are given in
CPU time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from store import FixStore

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
TICK = os.sysconf("SC_CLK_TCK")


def cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def load_average() -> float:
    """The 1-minute load average (> the CPU count: other work competes for the cores)."""
    return round(os.getloadavg()[0], 2)


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine(load_at_start: float) -> dict[str, Any]:
    """CPU, memory, load average at start and now, Python and platform."""
    mem = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    return {
        "cpu": _cpu_model(),
        "cpus": cpus(),
        "memory_mb": mem,
        "load_average_1m_at_start": load_at_start,
        "load_average_1m_at_end": load_average(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def versions() -> dict[str, str]:
    """fixmem's git commit (``+dirty`` with local changes), redis-server's and the libraries' versions."""
    out: dict[str, str] = {}
    try:
        sha = subprocess.run(
            check=False,
            args=["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            check=False,
            args=["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        out["fixmem"] = sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        out["fixmem"] = "unknown"
    with contextlib.suppress(Exception):
        from fixmem.runtime.redis_server import redis_server_binary  # noqa: PLC0415

        text = subprocess.run(
            check=False, args=[redis_server_binary(), "--version"], capture_output=True, text=True, timeout=10
        ).stdout
        out["redis-server"] = next(
            (w.split("=", 1)[1] for w in text.split() if w.startswith("v=")), text.strip()
        )
    for lib in ("redis", "rq", "pydantic", "orjson", "numpy", "fastapi", "uvicorn", "httpx"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[lib] = metadata.version(lib)
    return out


def write_result(name: str, result: dict[str, Any], *, directory: Path = RESULTS) -> Path:
    """Write ``result`` to ``<directory>/<name>.json`` (indented, trailing newline); returns the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return path


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` by linear interpolation; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def summary_ms(seconds: Sequence[float]) -> dict[str, Any]:
    """p50 / p99 / max / mean of ``seconds``, in milliseconds, and the sample count."""
    if not seconds:
        return {"count": 0}
    return {
        "count": len(seconds),
        "p50_ms": round(percentile(seconds, 50) * 1000, 3),
        "p99_ms": round(percentile(seconds, 99) * 1000, 3),
        "max_ms": round(max(seconds) * 1000, 3),
        "mean_ms": round(sum(seconds) / len(seconds) * 1000, 3),
    }


def histogram_quantile(buckets: Sequence[tuple[float, int]], q: float) -> float | None:
    """Prometheus' ``histogram_quantile``: the ``q`` (0..1) quantile of cumulative ``(le, count)`` buckets,
    linearly interpolated inside its bucket; None when empty or past the last finite bound."""
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    rank = q * total
    lower, below = 0.0, 0
    for bound, count in buckets:
        if count >= rank:
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = bound, count
    return None


# -- processes -------------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def running(pid: int) -> bool:
    """Whether ``pid`` is alive and not a zombie (a child that crashed, e.g. on an import error, is one
    until its parent waits for it; a run waiting for its work would otherwise wait out its deadline)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: assume alive
        return True


def peak_rss_mb(pid: int) -> float:
    """The peak resident set size of ``pid`` (``VmHWM``) in MiB; 0 when it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def children(parent: int) -> dict[int, str]:
    """``{pid: command line}`` of the live processes whose parent is ``parent``."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found[int(entry.name)] = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                )
    return found


def role_of(command: str) -> str:
    """``consumer``, ``worker``, ``redis`` or ``other`` from a child's command line."""
    if "redis-server" in command:
        return "redis"
    if " ingest" in command:
        return "consumer"
    if " worker" in command or "--baseline-worker" in command:
        return "worker"
    return "other"


@dataclass
class ProcessWatch:
    """Samples this process's children every ``interval`` s: peak RSS and CPU seconds by pid, with roles."""

    interval: float = 0.25
    peaks: dict[int, float] = field(default_factory=dict)
    cpu: dict[int, float] = field(default_factory=dict)
    roles: dict[int, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        for pid, command in children(os.getpid()).items():
            self.roles.setdefault(pid, role_of(command))
            self.peaks[pid] = max(self.peaks.get(pid, 0.0), peak_rss_mb(pid))
            self.cpu[pid] = max(self.cpu.get(pid, 0.0), cpu_seconds(pid))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> ProcessWatch:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="process-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def by_role(self) -> dict[str, dict[str, Any]]:
        """Per role: process count, the largest peak RSS (MiB) and total CPU seconds."""
        out: dict[str, dict[str, Any]] = {}
        for pid, role in self.roles.items():
            row = out.setdefault(role, {"processes": 0, "peak_rss_mb": 0.0, "cpu_seconds": 0.0})
            row["processes"] += 1
            row["peak_rss_mb"] = round(max(row["peak_rss_mb"], self.peaks.get(pid, 0.0)), 1)
            row["cpu_seconds"] = round(row["cpu_seconds"] + self.cpu.get(pid, 0.0), 2)
        return out


@contextlib.contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """Yields a dict that holds ``wall`` and ``cpu`` (this process) seconds when the block ends."""
    out: dict[str, float] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield out
    finally:
        out["wall"] = time.perf_counter() - wall
        out["cpu"] = time.process_time() - cpu


def default_store(data_dir: str | os.PathLike[str]) -> FixStore:
    """The store of ``data_dir`` as fixmem builds it with the default settings (no Redis lock)."""
    from fixmem import wiring  # noqa: PLC0415 - pydantic and the store load only for the benches using them
    from fixmem.settings import Settings  # noqa: PLC0415

    return wiring.make_store(Settings(data_dir=Path(data_dir)), None)


@contextlib.contextmanager
def serving(data_dir: Path, tokens: str, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """``fixmem serve`` over ``data_dir`` in its own process (``tokens``: ``token:owner,…``, a local store
    lock, no Redis unless ``extra_env`` names one); yields its base URL once ``/healthz`` answers. Raises
    RuntimeError if it never does."""
    import urllib.request  # noqa: PLC0415

    from fixmem.runtime.redis_server import free_port  # noqa: PLC0415

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    env |= {"FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_API_TOKENS": tokens, "FIXMEM_STORE_LOCK": "local"}
    env |= extra_env or {}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fixmem", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("fixmem serve did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_main(
    name: str,
    doc: str | None,
    run: Callable[[int], dict[str, Any]],
    *,
    runs: int,
    what: str,
    **parameters: Any,
) -> Callable[[list[str] | None], dict[str, Any]]:
    """The ``main(argv)`` of a benchmark timed over ``--runs`` runs: parse, run, print the summary, write
    ``bench/results/<name>.json`` (unless ``--no-write``)."""

    def main(argv: list[str] | None = None) -> dict[str, Any]:
        parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
        parser.add_argument("--runs", type=int, default=runs, help=f"runs per {what} (default {runs})")
        parser.add_argument("--no-write", action="store_true", help="print only")
        args = parser.parse_args(argv)
        load = load_average()
        started = time.monotonic()
        body = run(args.runs)
        result = {
            "benchmark": name,
            "machine": machine(load),
            "versions": versions(),
            "parameters": {"runs": args.runs, **parameters},
            "seconds": round(time.monotonic() - started, 1),
            **body,
        }
        print(json.dumps(result["summary"], indent=2))
        if not args.no_write:
            write_result(name, result)
        return result

    return main
