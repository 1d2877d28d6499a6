"""Where the worker's CPU goes, by stage: ``run_batch`` on fleet-like jobs of ~4 KB turns, each stage timed.

Run: ``python -m bench.worker_stages [--events 10000] [--projects 200] [--warm 2000] [--batch N]
[--write] [--name worker_stages] [--label TEXT]``. To measure an installed build (the compiled core of a
wheel), run this file with that venv's python and only this tree's ``bench`` importable, e.g.
``PYTHONPATH=<dir holding a bench symlink> <venv>/bin/python -m bench.worker_stages``: the stages are
found by name in whatever ``workers`` and ``store`` import, and the result says which (``subject``).

The jobs are the throughput A/B's (``bench/hotpath_ab.py``): ``bench.hotpath_ab.turn4k`` over
``--projects`` projects, cut into jobs by the real ``Consumer`` as the fleet's consumer cuts them with a
backlog (its settings' ``batch_max_events`` a cycle: ~25 events of a project in one append); ``--batch
100`` makes jobs of about one event per project instead, where every per-append cost is a per-event one.
``--warm`` events are processed first (not timed) so every project has a log, a summary and an index.
A private embedded Redis, a store in a temporary directory, one process, no RQ (the fleet's worker pays
RQ's per-job work and, with two workers, parses the lines the other one wrote). Each stage is a function
wrapped to add its CPU time (``process_time``, inclusive of what it calls: stages nest, see ``STAGES``)
and its calls; the wrapper costs ~1 us a call, so the stages are a little high; ``run_batch`` is the
whole, timed outside the wrappers.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis
from rq.job import Job
from rq.serializers import JSONSerializer

from bench.common import RESULTS, load_average, machine, versions, write_result
from bench.hotpath_ab import turn4k
from fixmem import wiring
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest.consumer import Consumer

# (stage, module where the name is looked up, attribute: a function, or Class.method), outermost first.
# Indented names in the printout nest in the one above them.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("decide", "workers.jobs", "decide"),
    ("decide/parse_any", "workers.jobs", "parse_any"),
    ("decide/extract", "workers.jobs", "extract"),
    ("read_events", "workers.jobs", "read_events"),
    ("present_before", "workers.jobs", "present_before"),
    ("append", "workers.jobs", "_append"),
    ("append/prepare", "store.api.core", "StoreCore._prepare"),
    ("append/sort_batch", "store.api.appending", "_sort_batch"),
    ("append/embed_many", "store.api.appending", "embed_many"),
    ("append/reconcile", "store.api.appending", "reconcile"),
    ("append/view_extend", "store.recall.view", "ProjectView.extend"),
    ("append/write_log", "store.api.appending", "Appending._write_added"),
    ("append/keep_summary", "store.api.summaries", "Summaries._keep_summary"),
    ("append/keep_usage", "store.api.learning", "Learning._keep_usage"),
    ("append/remember", "store.api.core", "StoreCore._remember"),
    ("append/write_index", "store.persist.fixlog", "write_index"),
    ("commit", "workers.jobs", "_commit"),
)


@dataclasses.dataclass
class _Clock:
    seconds: Counter[str] = dataclasses.field(default_factory=Counter)
    calls: Counter[str] = dataclasses.field(default_factory=Counter)

    def wrap(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[stage] += time.process_time() - started
                self.calls[stage] += 1

        return timed


@contextlib.contextmanager
def _installed(clock: _Clock) -> Iterator[None]:
    """Every stage wrapped where it is looked up (a name imported into a module is wrapped there), for
    the ``with`` block; the originals are put back after it."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        for stage, module_name, attribute in STAGES:
            owner: Any = importlib.import_module(module_name)
            name = attribute
            if "." in attribute:
                class_name, name = attribute.split(".")
                owner = getattr(owner, class_name)
            original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            undo.append((owner, name, original))
            setattr(owner, name, clock.wrap(stage, getattr(owner, name)))
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def _jobs(client: redis.Redis, settings: Settings, events: list[bytes], batch: int | None) -> list[str]:
    """The batch ids the real consumer makes of ``events`` (``batch`` events a cycle at most; None: the
    settings' ``batch_max_events``)."""
    with client.pipeline(transaction=False) as pipe:
        for raw in events:
            pipe.xadd(settings.stream, {b"event": raw})
        pipe.execute()
    config = dataclasses.replace(
        wiring.consumer_config(settings, name="stages"), read_block_ms=1, backpressure_jobs=10**9
    )
    if batch is not None:
        config = dataclasses.replace(config, batch_max_events=batch, read_count=min(config.read_count, batch))
    Consumer(client, config).run(burst=True)
    queue = f"rq:queue:{config.routes[0].queue}"
    job_ids = [j.decode() for j in client.lrange(queue, 0, -1)]  # type: ignore[union-attr]
    client.delete(queue)
    return [Job.fetch(j, connection=client, serializer=JSONSerializer).args[0] for j in job_ids]


def measure(events: int, projects: int, warm: int, batch: int | None) -> dict[str, Any]:
    """Run the warm-up, then the timed jobs with every stage wrapped; figures per event."""
    import workers.jobs  # noqa: PLC0415 - the stages are found in what this python imports
    from workers.extraction import compiled  # noqa: PLC0415

    tmp = Path(tempfile.mkdtemp(prefix="fixmem-stages-"))
    server = EmbeddedRedis(data_dir=tmp / "redis")
    try:
        client = redis.Redis.from_url(server.start(), socket_timeout=300)
        settings = Settings.from_env({"FIXMEM_DATA_DIR": str(tmp / "data")})
        context = wiring.worker_context(settings, client)
        for batch_id in _jobs(client, settings, [turn4k(i, projects) for i in range(warm)], batch):
            workers.jobs.run_batch(context, batch_id)
        timed = _jobs(client, settings, [turn4k(i, projects) for i in range(warm, warm + events)], batch)
        clock = _Clock()
        with _installed(clock):
            started = time.process_time()
            for batch_id in timed:
                workers.jobs.run_batch(context, batch_id)
            total = time.process_time() - started
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "subject": {"workers": workers.jobs.__file__, "compiled_extraction_core": compiled()},
        "jobs": len(timed),
        "run_batch_cpu_ms_per_event": round(1000 * total / events, 4),
        "stages_cpu_ms_per_event": {s: round(1000 * clock.seconds[s] / events, 4) for s, _, _ in STAGES},
        "stage_calls": {s: clock.calls[s] for s, _, _ in STAGES},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse arguments, measure, print (and write) the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=10_000, help="events timed")
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--warm", type=int, default=2_000, help="events processed first, not timed")
    parser.add_argument("--batch", type=int, default=None, help="most events a consumer cycle takes")
    parser.add_argument("--label", default="", help="what was measured (kept in the result)")
    parser.add_argument("--write", action="store_true", help="write bench/results/<name>.json")
    parser.add_argument("--name", default="worker_stages")
    args = parser.parse_args(argv)
    load = load_average()
    summary = measure(args.events, args.projects, args.warm, args.batch)
    print(f"run_batch {summary['run_batch_cpu_ms_per_event']:.3f} ms CPU/event ({summary['subject']})")
    for stage, ms in summary["stages_cpu_ms_per_event"].items():
        name, calls = stage.split("/")[-1], summary["stage_calls"][stage]
        print(f"  {'  ' * stage.count('/')}{name:24} {ms:7.3f}  ({calls})")
    result = {
        "benchmark": args.name,
        "method": "run_batch on consumer-made jobs of ~4 KB turns in one process, each stage wrapped with "
        "process_time (inclusive; nested stages are inside their parent); per event",
        "machine": machine(load),
        "versions": versions(),
        "parameters": {k: v for k, v in vars(args).items() if k != "write"},
        "summary": summary,
    }
    if args.write:
        print(write_result(args.name, result, directory=RESULTS), flush=True)
    return result


if __name__ == "__main__":
    main()
