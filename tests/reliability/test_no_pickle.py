"""No pickle crosses the network: what RQ carries is JSON, and a pickled payload is refused, never run.

The payload is live: unpickling it creates a marker file (checked first, in this process). It is then
put everywhere a hostile writer to Redis could put it — a job enqueued with RQ's default (pickle)
serializer, a hand-made job hash (``data``, ``meta``, ``result``, compressed or not), a batch hash and the
turn stream — and the real worker process, ``fixmem status`` and a ``/metrics`` scrape read all of it.
The marker must never appear, the bad jobs must fail as undecodable, and the valid batch queued after
them must still be recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
import zlib
from pathlib import Path

import orjson
import redis
from prometheus_client import CollectorRegistry, generate_latest
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from fixmem import wiring
from fixmem.runtime.metrics import FleetCollector, FleetSource
from fixmem.settings import Settings
from ingest import keys
from ingest.consumer import Consumer
from ingest.publish import publish_many
from tests.configs import fix_store
from tests.ingest.turns import turn
from tests.reliability.fleet import ROOT

LIVE = keys.DEFAULT_LIVE_QUEUE


class Plant:
    """Unpickling this creates ``marker`` (a stand-in for any code a pickle can run)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _payload(marker: Path) -> bytes:
    return pickle.dumps(Plant(marker), protocol=pickle.HIGHEST_PROTOCOL)


def test_the_payload_is_live(tmp_path: Path) -> None:
    """Positive control: whoever unpickles the payload creates the marker."""
    marker = tmp_path / "control"
    pickle.loads(_payload(marker))  # the point of the test
    assert marker.exists()


def _hand_made_job(client: redis.Redis, job_id: str, payload: bytes, *, compress: bool) -> None:
    data = zlib.compress(payload) if compress else payload
    client.hset(
        f"rq:job:{job_id}",
        mapping={
            "data": data, "meta": payload, "result": payload, "origin": LIVE, "status": "queued",
            "created_at": "2024-01-01T00:00:00.000000Z", "enqueued_at": "2024-01-01T00:00:00.000000Z",
            "description": "planted",
        },
    )  # fmt: skip
    client.rpush(f"rq:queue:{LIVE}", job_id)
    client.sadd("rq:queues", f"rq:queue:{LIVE}")


def test_pickled_payloads_are_refused_and_never_unpickled(
    redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    payload = _payload(marker)
    settings = Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir)})

    # 1. RQ's default serializer (pickle), with the plant among the job's arguments.
    pickled = Queue(LIVE, connection=redis_client).enqueue("tests.workers.helpers.record", Plant(marker))
    # 2. Hand-made job hashes: pickle in data, meta and result; zlib-compressed and plain.
    _hand_made_job(redis_client, "planted-plain", payload, compress=False)
    _hand_made_job(redis_client, "planted-zlib", payload, compress=True)
    # 3. The pickle as an event, in the turn stream and in a batch hash the consumer never wrote.
    redis_client.xadd(keys.DEFAULT_STREAM, {keys.EVENT_FIELD: payload})
    redis_client.hset(keys.batch("fx-live-planted"), mapping={"1-1": payload, "stream": keys.DEFAULT_STREAM})
    Queue(LIVE, connection=redis_client, serializer=JSONSerializer).enqueue(
        "workers.jobs.process_batch", "fx-live-planted", job_id="fx-live-planted"
    )
    # 4. Then a valid turn, through the consumer: it must still be recorded.
    publish_many(redis_client, [turn(1)])
    Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)

    env = {**os.environ, "FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir)}
    worker = subprocess.run(
        [sys.executable, "-m", "fixmem.cli.children", "worker", "--burst"],
        cwd=ROOT, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    status = subprocess.run(
        [sys.executable, "-m", "fixmem", "status", "--json"],
        cwd=ROOT, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    registry = CollectorRegistry()
    registry.register(FleetCollector(redis_client, FleetSource.from_settings(settings)))
    scrape = generate_latest(registry).decode()

    assert not marker.exists(), "a pickled payload was unpickled"
    assert worker.returncode == 0, worker.stderr.decode()[-2000:]
    assert status.returncode == 0, status.stderr.decode()[-2000:]
    assert fix_store(data_dir).read("alice", "github.com/acme/widgets").entries  # the valid turn got through
    failed = set(
        Queue(LIVE, connection=redis_client, serializer=JSONSerializer).failed_job_registry.get_job_ids()
    )
    assert {pickled.id, "planted-plain", "planted-zlib"} <= failed
    letters = redis_client.xrange(keys.DEFAULT_DEAD_STREAM)
    reasons = sorted(fields[b"reason"].decode() for _, fields in letters)
    assert reasons == ["invalid_utf8", "invalid_utf8"]  # the stream entry and the planted batch's event
    assert json.loads(status.stdout)["queues"]  # status read the queues without unpickling anything
    assert "fixmem_queue_jobs" in scrape
    print(
        f"\n{len(failed)} pickled jobs refused ({sorted(failed)}), 2 pickled events dead-lettered "
        f"({reasons}); marker never created; the valid turn recorded"
    )


def test_the_consumer_enqueues_json_jobs_that_carry_only_a_batch_id(
    redis_url: str, redis_client: redis.Redis, data_dir: Path
) -> None:
    settings = Settings.from_env({"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir)})
    publish_many(redis_client, [turn(i) for i in range(3)])
    Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
    (job_id,) = [j.decode() for j in redis_client.lrange(f"rq:queue:{LIVE}", 0, -1)]
    raw = redis_client.hget(f"rq:job:{job_id}", "data")
    assert raw is not None
    with contextlib.suppress(zlib.error):  # RQ compresses job data above a size
        raw = zlib.decompress(raw)
    assert orjson.loads(raw) == ["workers.jobs.process_stream_batch", None, [job_id], {}]
    job = Job.fetch(job_id, connection=redis_client, serializer=JSONSerializer)
    assert list(job.args) == [job_id]  # the batch hash names the events' stream ids
