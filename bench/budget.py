"""The hot path's cost in counts, not seconds: function calls and Redis commands per event, against a budget.

Run: ``python -m bench.budget`` (print the counts beside ``bench/budget.json``) or ``python -m bench.budget
--write --why "what changed and why it is worth it"`` (make the counts the new budget; a reviewed commit).

Counts move only when the code or the corpus does, whatever the machine is doing, so a test can hold them
(``tests/bench/test_budget.py``): a count above its budget by more than ``tolerance`` fails the suite, and
one far below it asks for the budget to come down. The corpus is fixed: realistic ~25 KB turns of
``bench.generator`` and ~4 KB turns (``bench.hotpath_ab.turn4k``). Counted:

- ``extraction_calls_per_turn``: Python and C function calls (``cProfile``'s count) of ``extract`` per
  turn, each turn extracted with every extraction cache cleared first (a real turn is extracted once);
- ``consumer_calls_per_event`` and ``run_batch_calls_per_event``: calls in one burst of the real
  ``Consumer`` over the 4 KB turns, then in ``run_batch`` on each job it made, per event;
- ``redis_commands_per_event``: commands Redis ran for them (``INFO commandstats``, those inside Lua
  scripts too), per event; ``*_round_trips_per_event``: requests the consumer and ``run_batch`` sent
  (a command or a pipeline each), per event.

Counts need the pure-Python build: the mypyc-compiled core makes no Python calls to count.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import dataclasses
import importlib
import json
import pkgutil
import pstats
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis
from rq.job import Job
from rq.serializers import JSONSerializer

from bench.generator import TurnGenerator
from bench.hotpath_ab import turn4k
from fixmem import wiring
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest.consumer import Consumer
from ingest.schema import parse_event
from workers import extraction
from workers.extraction import compiled, extract
from workers.jobs import run_batch

BUDGET = Path(__file__).resolve().parent / "budget.json"
REALISTIC_TURNS = 40
SMALL_TURNS = 40
BATCH_EVENTS = 400
BATCH_PROJECTS = 40


def _calls(profile: cProfile.Profile) -> int:
    return sum(row[1] for row in pstats.Stats(profile).stats.values())  # type: ignore[attr-defined]


def _round_trips(profile: cProfile.Profile) -> int:
    """Requests sent to Redis: one ``send_packed_command`` per command or pipeline (redis-py)."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    return sum(row[1] for (_, _, name), row in stats.items() if name == "send_packed_command")


def _clear_caches() -> None:
    for info in pkgutil.iter_modules(extraction.__path__):
        module = importlib.import_module(f"{extraction.__name__}.{info.name}")
        for value in list(vars(module).values()):
            clear: Callable[[], None] | None = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()


def corpus() -> list[bytes]:
    """The extraction corpus: realistic turns and ~4 KB turns, the same bytes on every run."""
    generator = TurnGenerator(7, projects=20, owners=4)
    return [*generator.wires(0, REALISTIC_TURNS), *(turn4k(i, 20) for i in range(SMALL_TURNS))]


def extraction_calls() -> float:
    """Function calls of ``extract`` per corpus turn, caches cleared before each turn."""
    events = [parse_event(raw) for raw in corpus()]
    total = 0
    for event in events:
        _clear_caches()
        profile = cProfile.Profile()
        profile.enable()
        extract(event)
        profile.disable()
        total += _calls(profile)
    return total / len(events)


@dataclasses.dataclass
class _Commands:
    client: redis.Redis

    def total(self) -> int:
        stats: dict[str, dict[str, Any]] = self.client.info("commandstats")  # type: ignore[assignment]
        return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")


@contextlib.contextmanager
def _redis() -> Iterator[tuple[redis.Redis, Path]]:
    with tempfile.TemporaryDirectory(prefix="fixmem-budget-") as tmp:
        server = EmbeddedRedis(data_dir=Path(tmp) / "redis")
        client = redis.Redis.from_url(server.start())
        try:
            yield client, Path(tmp)
        finally:
            server.stop()


def pipeline_counts(client: redis.Redis, data_dir: Path) -> dict[str, float]:
    """Calls of one consumer burst and of ``run_batch`` on its jobs, and Redis commands, per event."""
    settings = Settings.from_env({"FIXMEM_DATA_DIR": str(data_dir)})
    events = [turn4k(i, BATCH_PROJECTS) for i in range(BATCH_EVENTS)]
    with client.pipeline(transaction=False) as pipe:
        for raw in events:
            pipe.xadd(settings.stream, {b"event": raw})
        pipe.execute()
    commands = _Commands(client)
    config = dataclasses.replace(
        wiring.consumer_config(settings, name="budget"), read_block_ms=1, backpressure_jobs=10**9
    )
    consumer = Consumer(client, config)
    before = commands.total()
    profile = cProfile.Profile()
    profile.enable()
    consumer.run(burst=True)
    profile.disable()
    consumer_calls, consumer_trips = _calls(profile), _round_trips(profile)
    queue = config.routes[0].queue
    job_ids = [j.decode() for j in client.lrange(f"rq:queue:{queue}", 0, -1)]  # type: ignore[union-attr]
    batches = [Job.fetch(j, connection=client, serializer=JSONSerializer).args[0] for j in job_ids]
    context = wiring.worker_context(settings, client)
    worker_calls = worker_trips = 0
    for batch in batches:
        profile = cProfile.Profile()
        profile.enable()
        run_batch(context, batch)
        profile.disable()
        worker_calls += _calls(profile)
        worker_trips += _round_trips(profile)
    fetches = 2 * len(job_ids)  # the LRANGE and the job fetches above are the benchmark's, not the pipeline's
    return {
        "consumer_calls_per_event": consumer_calls / len(events),
        "run_batch_calls_per_event": worker_calls / len(events),
        "redis_commands_per_event": (commands.total() - before - fetches) / len(events),
        "consumer_round_trips_per_event": consumer_trips / len(events),
        "run_batch_round_trips_per_event": worker_trips / len(events),
    }


def measure(client: redis.Redis, data_dir: Path) -> dict[str, float]:
    """Every counted figure of this tree (see the module docstring), on an empty Redis and data dir."""
    counts = {"extraction_calls_per_turn": extraction_calls(), **pipeline_counts(client, data_dir)}
    return {k: round(v, 3) for k, v in counts.items()}


def load_budget() -> dict[str, Any]:
    return dict(json.loads(BUDGET.read_text()))


def verdicts(counts: dict[str, float], budget: dict[str, Any]) -> dict[str, str]:
    """Per figure: ``ok``, ``over`` (above budget x (1 + tolerance)) or ``under`` (below budget x (1 -
    2 x tolerance): the budget should come down so it keeps guarding)."""
    tolerance = float(budget["tolerance"])
    out = {}
    for name, limit in budget["counts"].items():
        value = counts[name]
        out[name] = (
            "over"
            if value > limit * (1 + tolerance)
            else "under"
            if value < limit * (1 - 2 * tolerance)
            else "ok"
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help="make the counts the budget (needs --why)")
    parser.add_argument("--why", default="", help="why the budget moves (kept in the file's history)")
    args = parser.parse_args(argv)
    if compiled():
        raise SystemExit("the extraction core is compiled (mypyc): count on a pure-Python install")
    with _redis() as (client, tmp):
        counts = measure(client, tmp / "data")
    budget = load_budget() if BUDGET.exists() else {"tolerance": 0.05, "counts": {}, "history": []}
    for name, value in counts.items():
        print(f"{name:32} {value:12.3f}   budget {budget['counts'].get(name, '-')}")
    if args.write:
        if not args.why:
            raise SystemExit("--write needs --why: say what changed and why it is worth it")
        budget["counts"] = counts
        budget["history"] = [*budget.get("history", []), {"counts": counts, "why": args.why}]
        BUDGET.write_text(json.dumps(budget, indent=2) + "\n")
        print(f"wrote {BUDGET}")


if __name__ == "__main__":
    main()
