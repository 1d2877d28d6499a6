"""Backfill benchmark: real agent logs through the whole pipeline, and live latency while it runs.

Run: ``python -m bench.backfill_bench [--corpus DIR] [--copies N] [--layout owners|projects|both]``.
Prints JSON and writes ``bench/results/backfill.json``.

What runs: an embedded ``redis-server`` (AOF everysec, as ``fixmem up``), one consumer and ``--workers``
workers (processes, started as ``fixmem up`` starts them), and in this process the backfill itself — the
functions ``fixmem backfill`` calls, with its default limits (``run_backfill``: walk, detect, parse,
publish with the checkpoint; ``follow``: until every turn is processed; ``collect``: the outcomes) —
over ``--copies`` copies of the corpus, each new work (its own ids, entries and logs):

- layout ``owners``: each copy under its own owner, projects from the logs (the shared corpus has 18
  trajectories in 11 projects: ~2 turns per project, the worst case for the store);
- layout ``projects``: one owner, each copy one project (``--project``), like a team's history of a repo.

Per layout, on a fresh pipeline:

1. *Throughput*: the backfill alone, from the first file read to the last turn processed (entries on disk):
   trajectories (agent runs or sessions, counted as ``bench.importers_bench`` does), files, events and MB
   per second; the publish side alone; CPU seconds per process role (where the time goes).
2. *Live latency*: live turns at ``--live-rate``/s over 5 projects, publish -> entry on disk (log tails
   polled every 10 ms), p50/p99 with no backfill, then during a backfill of new copies.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import redis
from rq import Worker

from bench.common import cpu_seconds, default_store
from fixmem.cli.backfill import run_config
from fixmem.runtime.demo import demo_turns
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest.backfill.config import RunConfig, parse_processes
from ingest.backfill.follow import follow
from ingest.backfill.records import Drain, RunResult
from ingest.backfill.run import run_backfill, walk
from ingest.importers import import_file
from ingest.publish import publish_many
from store import FixStore, entry_id
from store.paths import project_files
from workers.backfill_outcomes import PresenceProbe, collect

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "backfill.json"
SHARED = Path("/work/shared/data/agent-logs")
FIXTURES = ROOT / "tests" / "fixtures" / "agent-logs"
GOAL_TRAJECTORIES_PER_S = 200
LIVE_OWNER = "bench-live"
LIVE_PROJECTS = [f"github.com/fixmem/live-bench-{i}" for i in range(5)]  # a fleet: a few busy repositories


def _self_cpu() -> float:
    """CPU seconds of this process and of its children that ended (the backfill's parse processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime


FLEET_ENV = "FIXMEM_BENCH_FLEET"  # "installed": the fleet runs the fixmem this Python has installed


@contextmanager
def pipeline(data_dir: Path, workers: int, live_only: int = 0) -> Iterator[tuple[str, dict[str, int]]]:
    """An embedded Redis, a consumer and ``workers`` workers (the first ``live_only`` of them serve only
    the live queue); yields the URL and role -> pid. The fleet runs this checkout's code, or with
    ``FIXMEM_BENCH_FLEET=installed`` the fixmem installed in this Python (a compiled wheel, say: run
    from outside the checkout, with ``bench`` on the path)."""
    server = EmbeddedRedis(data_dir=data_dir / "redis", appendonly=True)
    url = server.start()
    env = {**os.environ, "FIXMEM_REDIS_URL": url, "FIXMEM_DATA_DIR": str(data_dir)}
    if os.environ.get(FLEET_ENV) != "installed":  # this checkout's code (else: what this Python installed)
        env["PYTHONPATH"] = str(ROOT)
    fixmem = [sys.executable, "-m", "fixmem.cli.children"]  # as `fixmem up` starts its children
    procs = {"consumer": subprocess.Popen([*fixmem, "ingest", "--name", "bench"], env=env)}
    for i in range(workers):
        own = {**env, "FIXMEM_BACKFILL_QUEUE": "fixmem-bench-none"} if i < live_only else env
        procs[f"worker-{i}"] = subprocess.Popen([*fixmem, "worker"], env=own)
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 60
    while Worker.count(connection=client) < workers and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = {role: p.pid for role, p in procs.items()}
    assert server.process is not None
    pids["redis"] = server.process.pid
    try:
        yield url, pids
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        # A scratch Redis whose data is thrown away: kill it instead of waiting for SHUTDOWN to flush and
        # fsync an append-only file of up to ~1 GB (3-5 s a fleet; a suite run starts 16 fleets).
        if server.process is not None:
            server.process.kill()
            server.process.wait()
        server.stop()


class LivePublisher:
    """Publishes one live turn every 1/rate s and measures publish -> entry on disk (seconds)."""

    def __init__(self, client: redis.Redis, store: FixStore, stream: str, rate: float, tag: str) -> None:
        self.client, self.store, self.stream, self.rate, self.tag = client, store, stream, rate, tag
        self.sent: dict[str, tuple[str, float]] = {}  # entry id -> (project, published at)
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._publish), threading.Thread(target=self._poll)]

    def __enter__(self) -> LivePublisher:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.threads[0].join()
        deadline = time.monotonic() + 60
        while len(self.seen) < len(self.sent) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.done.set()
        self.threads[1].join()

    def _publish(self) -> None:
        i = 0
        next_at = time.monotonic()
        while not self.stop.is_set():
            project = LIVE_PROJECTS[i % len(LIVE_PROJECTS)]
            turn = demo_turns(time.time())[i % 3]
            turn.update(owner=LIVE_OWNER, project_key=project, event_id=f"live-{self.tag}-{i}")
            eid = entry_id(LIVE_OWNER, project, turn["event_id"])
            self.sent[eid] = (project, time.time())  # before XADD: the poller may see the entry at once
            publish_many(self.client, [turn], stream=self.stream)
            i += 1
            next_at += 1 / self.rate
            self.stop.wait(max(0.0, next_at - time.monotonic()))

    def _poll(self) -> None:
        """Every 10 ms, read what was appended to the live projects' logs (cheap: no store views)."""
        logs = {project: project_files(self.store.root, LIVE_OWNER, project).log for project in LIVE_PROJECTS}
        offsets = dict.fromkeys(LIVE_PROJECTS, 0)
        while not self.done.is_set():
            for project, path in logs.items():
                try:
                    with path.open("rb") as f:
                        if path.stat().st_size < offsets[project]:
                            offsets[project] = 0  # rewritten (rotation): read it again
                        f.seek(offsets[project])
                        data = f.read()
                except FileNotFoundError:
                    continue
                now = time.time()
                complete = data[: data.rfind(b"\n") + 1]
                offsets[project] += len(complete)
                for line in complete.splitlines():
                    try:
                        eid = orjson.loads(line).get("id")
                    except orjson.JSONDecodeError:  # a rewrite under our offset: read it whole next time
                        offsets[project] = 0
                        break
                    if eid in self.sent and eid not in self.seen:
                        self.seen[eid] = now
            self.done.wait(0.01)

    def latencies(self) -> list[float]:
        return sorted(self.seen[e] - self.sent[e][1] for e in self.seen)


def _percentiles(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"count": 0}
    q = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return {
        "count": len(values),
        "p50_ms": round(1000 * q[49], 1),
        "p99_ms": round(1000 * q[98], 1),
        "max_ms": round(1000 * max(values), 1),
    }


def corpus_trajectories(corpus: Path) -> tuple[int, int]:
    """Agent runs/sessions and events in one copy of the corpus, counted as ``bench.importers_bench`` does."""
    found: set[tuple[str, str]] = set()
    events = 0
    for path in walk([corpus]):
        imported = import_file(path, owner="bench").events
        events += len(imported)
        found |= {
            (str(e.harness_meta.harness), e.harness_meta.session_id or path.as_posix()) for e in imported
        }
    return len(found), events


@dataclass(frozen=True)
class Options:
    """One benchmark run. ``layout``: how the copies differ (see ``LAYOUTS``)."""

    corpus: Path
    copies: int = 30
    layout: str = "owners"
    workers: int = 2
    live_only_workers: int = 0  # an experiment: workers that never take backfill jobs
    live_rate: float = 5.0
    baseline_seconds: float = 5.0
    timeout: float = 900.0


LAYOUTS = {
    "owners": "each copy under its own owner, projects from the logs (2 turns per project: the worst case)",
    "projects": "one owner, each copy one project (--project): 22 turns per project, as in a team's history",
}


def copy_config(options: Options, settings: Settings, k: int, phase: str) -> RunConfig:
    """The backfill options of copy ``k`` of a phase: the defaults of ``fixmem backfill`` (rate, backlog)."""
    owner, project = (
        (f"bench-{phase}-{k}", None) if options.layout == "owners" else (f"bench-{phase}", f"bench/repo-{k}")
    )
    return dataclasses.replace(
        run_config(settings, owner=owner, project=project),
        parse_nice=settings.backfill_nice,  # the command nices itself; here only its parse processes
    )


@dataclass
class Backfilled:
    """One phase's backfill: its runs, the pipeline's final state, and timings (seconds)."""

    results: list[tuple[RunConfig, RunResult]]
    drain: Drain
    published: float
    end_to_end: float
    cpu: dict[str, float]


def backfill_copies(
    client: redis.Redis,
    data_dir: Path,
    options: Options,
    settings: Settings,
    pids: dict[str, int],
    phase: str,
) -> Backfilled:
    """Back ``options.copies`` copies of the corpus fill, wait for the pipeline, measure CPU per role."""
    cpu_before = {role: cpu_seconds(pid) for role, pid in pids.items()}
    self_before = _self_cpu()
    results: list[tuple[RunConfig, RunResult]] = []
    started = time.monotonic()
    for k in range(options.copies):
        config = copy_config(options, settings, k, phase)
        probe = PresenceProbe(default_store(data_dir))  # as the command does
        results.append((config, run_backfill(client, [options.corpus], config, before_publish=probe)))
    published = time.monotonic() - started
    drain = follow(
        client, [s.stream_id for _, r in results for s in r.sent],
        stream=settings.backfill_stream, group=settings.group, queue=settings.backfill_queue,
        timeout=options.timeout, poll_seconds=0.1,
    )  # fmt: skip
    end_to_end = time.monotonic() - started
    cpu = {role: round(cpu_seconds(pid) - cpu_before[role], 2) for role, pid in pids.items()}
    cpu["backfill (this process and its parse processes)"] = round(_self_cpu() - self_before, 2)
    return Backfilled(results, drain, published, end_to_end, cpu)


def rates(count: dict[str, float], seconds: float) -> dict[str, float]:
    """``<name>_per_s`` for each count over ``seconds``."""
    return {"seconds": round(seconds, 2), **{f"{k}_per_s": round(v / seconds, 1) for k, v in count.items()}}


def run(options: Options) -> dict[str, Any]:
    """One benchmark run (a fresh pipeline); returns the figures.

    Phase 1: the backfill alone (throughput, CPU per role). Phase 2: live turns at a steady rate with no
    backfill (baseline latency), then during a second backfill of new copies (latency under backfill).
    """
    load_before = os.getloadavg()
    settings = Settings.from_env(os.environ)
    with tempfile.TemporaryDirectory(prefix="fixmem-backfill-bench-") as tmp:
        data_dir = Path(tmp)
        with pipeline(data_dir, options.workers, options.live_only_workers) as (url, pids):
            client = redis.Redis.from_url(url)
            store = default_store(data_dir)
            alone = backfill_copies(client, data_dir, options, settings, pids, "alone")
            live = (client, store, settings.stream, options.live_rate)
            with LivePublisher(*live, "baseline") as baseline:
                time.sleep(options.baseline_seconds)
            with LivePublisher(*live, "during") as during:
                mixed = backfill_copies(client, data_dir, options, settings, pids, "mixed")
            outcomes: Counter[str] = Counter()
            no_entry: Counter[str] = Counter()
            for config, result in alone.results:
                found = collect(
                    store, client, result.records, alone.drain,
                    dead_stream=settings.dead_stream, config=config,
                )  # fmt: skip
                outcomes.update(found.entries)
                no_entry.update(found.no_entry)
    records = [r for _, result in alone.results for r in result.records]
    logs = [r for r in records if r.sent]
    per_copy, events_per_copy = corpus_trajectories(options.corpus)
    trajectories = per_copy * options.copies
    events = sum(len(r.sent) for r in logs)
    assert events == events_per_copy * options.copies, "every copy publishes every event of the corpus"
    count = {
        "trajectories": trajectories,
        "files": len(logs),
        "events": events,
        "mb": sum(r.size for r in logs) / 1e6,
    }
    return {
        "corpus": str(options.corpus),
        "layout": options.layout,
        "layout_means": LAYOUTS[options.layout],
        "copies": options.copies,
        "workers": options.workers,
        "live_only_workers": options.live_only_workers,
        "backfill_job_max_events": settings.backfill_job_max_events,
        "rate_limit_events_per_s": settings.backfill_rate,
        "max_backlog_events": settings.backfill_max_backlog,
        "max_queued_jobs": settings.backfill_max_queued_jobs,
        "parse_processes": parse_processes(settings.backfill_parse_processes),
        "parse_nice": settings.backfill_nice,
        "files_walked": len(records),
        "log_files": len(logs),
        "trajectories": trajectories,
        "events": events,
        "mb": round(count["mb"], 2),
        "settled": alone.drain.settled and mixed.drain.settled,
        "end_to_end": rates(count, alone.end_to_end),
        "publish": rates(count, alone.published),
        "cpu_seconds": alone.cpu,
        "cpu_ms_per_trajectory": {k: round(1000 * v / trajectories, 2) for k, v in alone.cpu.items()},
        "entries": dict(outcomes),
        "no_entry": dict(no_entry),
        "live_latency": {
            "rate_per_s": options.live_rate,
            "baseline_no_backfill": _percentiles(baseline.latencies()),
            "during_backfill": _percentiles(during.latencies()),
            "lost": len(during.sent) - len(during.seen) + len(baseline.sent) - len(baseline.seen),
            "backfill_end_to_end_meanwhile": rates(count, mixed.end_to_end),
        },
        "goal_trajectories_per_s": GOAL_TRAJECTORIES_PER_S,
        "goal_reached": trajectories / alone.end_to_end >= GOAL_TRAJECTORIES_PER_S,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        },
    }


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark, print the JSON figures and write them to ``bench/results/backfill.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=SHARED if SHARED.is_dir() else FIXTURES)
    parser.add_argument("--copies", type=int, default=30, help="copies of the corpus")
    parser.add_argument("--layout", choices=[*LAYOUTS, "both"], default="both")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--live-only-workers", type=int, default=0, help="of --workers, serving live only")
    parser.add_argument("--live-rate", type=float, default=5.0, help="live turns per second")
    parser.add_argument("--timeout", type=float, default=900.0, help="longest wait for the pipeline (s)")
    parser.add_argument("--baseline-seconds", type=float, default=5.0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    layouts = list(LAYOUTS) if args.layout == "both" else [args.layout]
    figures = {
        "goal_trajectories_per_s": GOAL_TRAJECTORIES_PER_S,
        "runs": [
            run(
                Options(
                    args.corpus, args.copies, layout, args.workers, args.live_only_workers, args.live_rate,
                    args.baseline_seconds, args.timeout,
                )
            )
            for layout in layouts
        ],
    }  # fmt: skip
    text = json.dumps(figures, indent=2)
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
