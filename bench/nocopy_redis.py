"""Issue 21, "no copy": what the batch hash's copy of each event costs Redis, alone, same run.

Run: ``python -m bench.nocopy_redis [--events N] [--job E] [--rounds R] [--small] [--write]``. A private
embedded Redis (AOF everysec, as ``fixmem up`` runs it) holds a stream of ``--events`` events
(``bench.events``: the ~25 KB mix; ``--small``: ~4 KB turns). Each round replays, for both ways in turn (the
order alternates), the Redis commands the consumer and the worker send for jobs of ``--job`` events:

- ``copy`` (before): ``HSET`` stream id -> event into the batch hash, ``HGETALL`` it, ``DEL`` it;
- ``ids_by_id`` / ``ids_one_run`` (after): ``HSET`` stream id -> "" plus a ``ZADD`` hold, then one
  pipelined ``XRANGE`` per id (a job's ids not adjacent in the stream: the worst case, a backlog packed by
  project) or one per job (all adjacent: a steady flow's job), then ``DEL`` and ``ZREM``.

What is compared: Redis's own CPU (``INFO cpu`` used_cpu_sys + used_cpu_user) and AOF bytes written
(``INFO persistence`` aof_current_size) per event, and the client's wall time per event; medians of the
rounds. The XADD that both ways share is not counted. The machine is shared: compare within a run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import redis

from bench.common import load_average, machine, versions, write_result
from bench.events import make_events
from bench.pipeline_bench import make_event
from bench.throughput import private_redis

STREAM = "fixmem:turns"
HELD = "fixmem:held:fixmem:turns"


def _redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _aof_bytes(client: redis.Redis) -> int:
    return int(client.info("persistence")["aof_current_size"])


def _copy(client: redis.Redis, ids: list[str], bodies: dict[str, bytes], job: int) -> None:
    for n, start in enumerate(range(0, len(ids), job)):
        chunk = ids[start : start + job]
        key = f"fixmem:batch:bench-{n}"
        with client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={**{i: bodies[i] for i in chunk}, "stream": STREAM})
            pipe.execute()
        client.hgetall(key)
        client.delete(key)


def _ids(client: redis.Redis, ids: list[str], job: int, *, adjacent: bool) -> None:
    for n, start in enumerate(range(0, len(ids), job)):
        chunk = ids[start : start + job]
        key = f"fixmem:batch:bench-{n}"
        cuts = [(chunk[0], chunk[-1], len(chunk))] if adjacent else [(i, i, 1) for i in chunk]
        with client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={**dict.fromkeys(chunk, b""), "stream": STREAM, "runs": repr(cuts)})
            pipe.zadd(HELD, {key: int(chunk[0].split("-")[0])})
            pipe.execute()
        client.hgetall(key)
        with client.pipeline(transaction=False) as pipe:
            for first, last, count in cuts:
                pipe.xrange(STREAM, min=first, max=last, count=count)
            pipe.execute()
        with client.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            pipe.zrem(HELD, key)
            pipe.execute()


def measure(
    client: redis.Redis, way: str, ids: list[str], bodies: dict[str, bytes], job: int
) -> dict[str, float]:
    """Redis CPU, AOF bytes and client wall per event of one pass of ``way`` over ``ids``."""
    cpu, aof, wall = _redis_cpu(client), _aof_bytes(client), time.perf_counter()
    if way == "copy":
        _copy(client, ids, bodies, job)
    else:
        _ids(client, ids, job, adjacent=way == "ids_one_run")
    n = len(ids)
    return {
        "redis_cpu_us_per_event": round(1e6 * (_redis_cpu(client) - cpu) / n, 2),
        "aof_bytes_per_event": round((_aof_bytes(client) - aof) / n, 1),
        "client_wall_us_per_event": round(1e6 * (time.perf_counter() - wall) / n, 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse arguments, run the rounds, print (and write) the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=3_000)
    parser.add_argument("--job", type=int, default=100, help="events per job")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="~4 KB turns instead of the ~25 KB mix")
    parser.add_argument("--write", action="store_true", help="write bench/results/nocopy_redis[_small].json")
    args = parser.parse_args(argv)
    load = load_average()
    events = [make_event(i, 50) for i in range(args.events)] if args.small else make_events(args.events)
    rows: dict[str, list[dict[str, float]]] = {"copy": [], "ids_by_id": [], "ids_one_run": []}
    with private_redis() as (url, _tmp):
        client = redis.Redis.from_url(url, socket_timeout=300)
        client.config_set("appendfsync", "no")  # AOF bytes are counted, not fsync waits
        client.config_set("auto-aof-rewrite-percentage", 0)  # a rewrite mid-round skews both figures
        ids: list[str] = []
        for start in range(0, len(events), 100):
            with client.pipeline(transaction=False) as pipe:
                for raw in events[start : start + 100]:
                    pipe.xadd(STREAM, {b"event": raw})
                ids += [i.decode() for i in pipe.execute()]
        bodies = dict(zip(ids, events, strict=True))
        for r in range(args.rounds):
            ways = list(rows)
            for way in ways if r % 2 == 0 else reversed(ways):
                rows[way].append(measure(client, way, ids, bodies, args.job))
                print(f"round {r} {way}: {json.dumps(rows[way][-1])}", flush=True)
    summary = {
        way: {k: statistics.median(row[k] for row in got) for k in got[0]} for way, got in rows.items()
    }
    result = {
        "benchmark": "nocopy_redis",
        "method": "same run, interleaved rounds (order alternates), medians; Redis CPU from INFO cpu",
        "machine": machine(load),
        "versions": versions(),
        "parameters": vars(args),
        "mean_event_bytes": round(sum(map(len, events)) / len(events)),
        "rounds": rows,
        "summary": summary,
    }
    print(json.dumps(summary, indent=2))
    if args.write:
        print(write_result("nocopy_redis_small" if args.small else "nocopy_redis", result), flush=True)
    return result


if __name__ == "__main__":
    main()
