"""CPU per event of the job path, in one process: the consumer's cycle, then ``run_batch`` on each job.

Run: ``python -m bench.job_profile [--events N] [--projects P] [--warm W] [--read R] [--profile ROLE]``.
A private embedded Redis (AOF everysec) and a store in a temporary directory; ``--warm`` events are
extracted and appended first (not timed), so with ``--warm`` >= 500 x ``--projects`` every timed append
is at the rotation cap, as in half of benchmark 1. Then the ``--events`` are XADDed, one burst of the
real ``Consumer`` makes the jobs (``--read``: at most this many events a cycle; a job holds one project's
events of a cycle), and ``run_batch`` runs each job as a worker would, without RQ. Prints consumer and
worker CPU ms per event (``time.process_time``) and the worker's wall; ``--profile consumer|worker``
adds that role's cProfile (cumulative and own time). No RQ bookkeeping, no lock contention, no other
process on the cores: the lower bound of what benchmark 1 pays per event.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import shutil
import tempfile
import time
from pathlib import Path

import redis
from rq.job import Job
from rq.serializers import JSONSerializer

from bench.common import default_store, load_average, machine, versions, write_result
from bench.events import make_events
from fixmem import wiring
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest.consumer import Consumer
from ingest.schema import parse_event
from store import FixEntry, FixStore
from workers.extraction import extract
from workers.jobs import run_batch


def _warm(store: FixStore, events: list[bytes], batch: int = 100) -> list[int]:
    """Append the entries of ``events`` in batches per project; returns the projects' sizes."""
    by_project: dict[tuple[str, str], list[FixEntry]] = {}
    for raw in events:
        event = parse_event(raw)
        entry = extract(event).entry
        if entry is not None:
            by_project.setdefault((event.owner, event.project_key), []).append(entry)
    for (owner, project), entries in by_project.items():
        for start in range(0, len(entries), batch):
            store.append(owner, project, entries[start : start + batch])
    return sorted(len(store.read(o, p).entries) for o, p in by_project)


def _print_profile(profile: cProfile.Profile, lines: int) -> None:
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(lines)
    stats.sort_stats("tottime").print_stats(lines)


# The worker's stages, by the function that is each one's whole cost: (module path suffix, function name).
STAGES = {
    "extraction": ("workers/extraction/turn.py", "extract"),
    "validation": ("ingest/schema.py", "parse_any"),  # the one full validation (issue 21)
    "rotation_rewrite": ("store/persist/fixlog.py", "rewrite"),
    "index_write": ("store/persist/fixlog.py", "write_index"),
    "store_append": ("store/api.py", "append"),
}


def stage_shares(profile: cProfile.Profile) -> dict[str, float]:
    """Each stage's cumulative time as a share (0..1) of the profiled total."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(tt for _, _, tt, _, _ in stats.values()) or 1.0
    shares = {}
    for stage, (path, name) in STAGES.items():
        cumulative = max(
            (
                ct
                for (file, _, func), (_, _, _, ct, _) in stats.items()
                if func == name and file.endswith(path)
            ),
            default=0.0,
        )
        shares[stage] = round(cumulative / total, 3)
    return shares


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=3_000, help="events timed (default 3,000)")
    parser.add_argument("--projects", type=int, default=50, help="projects they spread over (default 50)")
    parser.add_argument("--warm", type=int, default=0, help="events appended first, not timed (default 0)")
    parser.add_argument("--read", type=int, default=5_000, help="most events a consumer cycle takes")
    parser.add_argument("--profile", choices=("consumer", "worker"), default=None)
    parser.add_argument("--lines", type=int, default=40, help="rows of each profile table")
    parser.add_argument(
        "--write", action="store_true", help="write the figures to bench/results/job_profile[_<role>].json"
    )
    args = parser.parse_args(argv)
    load = load_average()
    wires = make_events(args.warm + args.events, projects=args.projects)
    warm, events = wires[: args.warm], wires[args.warm :]
    tmp = Path(tempfile.mkdtemp(prefix="fixmem-job-profile-"))
    server = EmbeddedRedis(data_dir=tmp / "redis", appendonly=True)
    client = redis.Redis.from_url(server.start(), socket_timeout=300)
    try:
        settings = Settings.from_env({})
        store = default_store(tmp / "data")
        if warm:
            print(f"warm: project sizes {_warm(store, warm)}", flush=True)
        for start in range(0, len(events), 100):
            with client.pipeline(transaction=False) as pipe:
                for raw in events[start : start + 100]:
                    pipe.xadd(settings.stream, {b"event": raw})
                pipe.execute()
        config = dataclasses.replace(
            wiring.consumer_config(settings, name="profile"),
            read_block_ms=1,
            backpressure_jobs=10**9,
            batch_max_events=args.read,
            read_count=min(500, args.read),
        )
        consumer_profile = cProfile.Profile() if args.profile == "consumer" else None
        started = time.process_time()
        if consumer_profile is not None:
            consumer_profile.enable()
        Consumer(client, config).run(burst=True)
        if consumer_profile is not None:
            consumer_profile.disable()
        consumer_cpu = time.process_time() - started
        queue = config.routes[0].queue
        job_ids = [j.decode() for j in client.lrange(f"rq:queue:{queue}", 0, -1)]  # type: ignore[union-attr]
        batches = [Job.fetch(j, connection=client, serializer=JSONSerializer).args[0] for j in job_ids]
        context = wiring.worker_context(settings, client, store=store)
        worker_profile = cProfile.Profile() if args.profile == "worker" else None
        started, wall = time.process_time(), time.perf_counter()
        if worker_profile is not None:
            worker_profile.enable()
        for batch in batches:
            run_batch(context, batch)
        if worker_profile is not None:
            worker_profile.disable()
        worker_cpu, worker_wall = time.process_time() - started, time.perf_counter() - wall
        n = len(events)
        per_job = n / max(1, len(batches))
        print(
            f"{n} events, {args.projects} projects, {len(batches)} jobs ({per_job:.1f} events/job): "
            f"consumer {1000 * consumer_cpu / n:.3f} ms CPU/event; worker {1000 * worker_cpu / n:.3f} ms "
            f"CPU/event, {1000 * worker_wall / n:.3f} ms wall/event",
            flush=True,
        )
        for profile in (consumer_profile, worker_profile):
            if profile is not None:
                _print_profile(profile, args.lines)
        if args.write:
            figures = {
                "events": n,
                "projects": args.projects,
                "jobs": len(batches),
                "events_per_job": round(per_job, 1),
                "consumer_cpu_ms_per_event": round(1000 * consumer_cpu / n, 3),
                "worker_cpu_ms_per_event": round(1000 * worker_cpu / n, 3),
                "worker_wall_ms_per_event": round(1000 * worker_wall / n, 3),
                "profiled": args.profile,
            }
            if worker_profile is not None:
                figures["worker_stage_shares"] = stage_shares(worker_profile)
            name = "job_profile" + (f"_{args.profile}" if args.profile else "")
            result = {
                "benchmark": name,
                "machine": machine(load),
                "versions": versions(),
                "parameters": {k: v for k, v in vars(args).items() if k != "write"},
                "summary": figures,
            }
            print(write_result(name, result), flush=True)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
