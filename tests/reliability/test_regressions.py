"""Fast regression tests, one per failure the reliability runs found (each fails on the code before its fix).

The scenario that found each one lives in its own module; these pin the root cause in a second or less.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import redis
from rq import Queue
from rq.executions import Execution
from rq.serializers import JSONSerializer

from fixmem.memory import FixMemory
from fixmem.runtime.redis_server import EmbeddedRedis
from fixmem.settings import Settings
from ingest import keys
from ingest.publish import publish_many
from ingest.schema import validate_event
from store import FixStore
from store.paths import project_files
from store.persist.fsio import temp_name
from store.redact import redact
from tests import configs
from tests.ingest.turns import turn
from tests.reliability.fleet import FAST, fleet, wait_for
from tests.store.factories import OWNER, PROJECT, make_entry
from workers.counters import read_counters
from workers.extraction import Limits, extract
from workers.reaper import reap_queue
from workers.worker import FixmemQueue, build_worker, run_worker


def test_a_rewrite_killed_before_its_rename_leaves_no_temp_file_after_the_next_write(data_dir: Path) -> None:
    """Found by test_rotation_kill: a worker SIGKILLed mid-rotation left a full copy of the log behind."""
    store = FixStore(data_dir, cap=3)
    store.append(OWNER, PROJECT, [make_entry(n) for n in range(3)])
    files = project_files(data_dir / "fix_memory", OWNER, PROJECT)
    stale = [temp_name(files.log), temp_name(files.index)]  # what a killed rewrite leaves
    for path in stale:
        path.write_bytes(files.log.read_bytes())
    unrelated = files.directory / ".notes.tmp"
    unrelated.write_text("not ours")

    store.append(OWNER, PROJECT, [make_entry(3)])  # rotates (cap 3) under the lock

    assert not any(p.exists() for p in stale)
    assert unrelated.exists()
    assert len(store.read(OWNER, PROJECT).entries) == 3


def _die_after_registering_the_execution(client: redis.Redis, queue: Queue) -> Execution:
    """Dequeue the next job and register its execution as a worker does — then 'die' before starting it."""
    worker = build_worker(client, configs.worker_options(queues=(queue.name,)))
    dequeued = FixmemQueue.dequeue_any([queue], None, connection=client, serializer=JSONSerializer)
    assert dequeued is not None
    return worker.prepare_execution(dequeued[0])  # prepare_job_execution (status STARTED) never runs


def test_a_worker_killed_before_starting_its_registered_job_loses_nothing(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Found by test_crashes (chaos, 20 kills): 4 of 10,000 events never got an outcome, their batch
    hashes left in Redis with no job in any queue or registry."""
    queue = FixmemQueue(keys.DEFAULT_LIVE_QUEUE, connection=redis_client, serializer=JSONSerializer)
    job = queue.enqueue("tests.workers.helpers.record", redis_url, "ran", "once", result_ttl=0)
    execution = _die_after_registering_the_execution(redis_client, queue)
    now = time.time()
    reap_queue(queue, now=now, stuck_seconds=10, max_abandons=3)  # a reaper runs while the lease is alive
    redis_client.zadd(queue.started_job_registry.key, {execution.composite_key: now - 1})  # the lease lapses
    redis_client.delete(execution.key)
    for later in (0, 11, 30):
        reap_queue(queue, now=now + later, stuck_seconds=10, max_abandons=3)
    assert queue.job_ids == [job.id], "the job is in no queue: its batch would wait forever"
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        run_worker(redis_client, configs.worker_options(queues=(queue.name,)), burst=True)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert redis_client.lrange("ran", 0, -1) == [b"once"]
    assert queue.failed_job_registry.count == 0  # RQ did not trip on a dead execution after success


def test_an_aws_secret_is_redacted_even_when_another_rule_takes_its_label() -> None:
    """Found by test_secrets: ``TOKEN=aws_secret_access_key = <40 chars>`` kept the secret: the
    assignment rule redacted the label first, and the AWS rule then saw no AWS word before the value."""
    body = "USV2VesOheDU9U8wMrIc4KH6LLZ+5l+4RrnU6U8X"
    assert body not in redact(f"TOKEN=aws_secret_access_key = {body} pytest -q")


CI_REMOTE = "https://gitlab-ci-token:glpat-AbCdEfGhIjKlMnOpQrSt@gitlab.example.com/acme/app.git"


def test_a_project_key_holding_a_token_is_recorded_under_its_redacted_name(data_dir: Path) -> None:
    """Found by test_secrets: every turn of a project keyed by a CI remote with a token was refused
    (InvalidEntry: extraction stores the redacted key) — dead-lettered by workers, with the raw token in
    the error and the worker's log — and the token would have named the log file."""
    memory = FixMemory(data_dir, settings=Settings.from_env({"HOME": "/nonexistent"}))
    event = turn(1, project=CI_REMOTE)
    entry = memory.record_from_turn(
        "alice", project_key=CI_REMOTE, user_message=event["user_message"], tool_events=event["tool_events"]
    )
    assert entry is not None and "glpat-" not in entry.project
    assert memory.stats("alice", CI_REMOTE)["total"] == 1  # the raw key finds it
    assert memory.stats("alice", entry.project)["total"] == 1  # so does the redacted one
    assert "glpat-" not in memory.stats("alice", CI_REMOTE)["project"]
    assert not any("AbCdEfGh" in str(p) for p in data_dir.rglob("*"))
    locked: list[str] = []

    @contextlib.contextmanager
    def lock(owner: str, key: str) -> Iterator[None]:
        locked.append(key)
        yield

    store = configs.fix_store(data_dir, lock_factory=lock)
    store.append("alice", CI_REMOTE, [entry.model_copy(update={"id": "fix-00000000000000ff"})])
    store.forget("alice", "fix-00000000000000ff")
    assert locked[0] == locked[1] == entry.project  # writers and forget take the same lock


def test_a_workspace_that_is_a_url_is_no_root_for_file_paths() -> None:
    """Found by test_secrets: relative paths were joined to a URL workspace and normalized
    (``https:/ci:<token>@host/repo/src/x.py``), which no redaction rule recognised any more."""
    event = turn(1, project=CI_REMOTE)
    event["workspace"] = "https://deploy:s3cr3tPassw0rdValue@git.example.com/acme/app.git"
    extracted = extract(validate_event(event))
    assert extracted.entry is not None
    assert extracted.entry.files == ["src/mod1.py"]


class _Crash(BaseException):
    """Stands for a SIGKILL: nothing after it runs (BaseException, so no handler catches it)."""


def test_a_batch_rerun_after_a_kill_counts_its_entries_as_recorded(
    redis_client: redis.Redis, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_crashes (chaos, 20 kills): 7,795 entries on disk, counters recorded 7,795 +
    duplicate 5, entries_total 7,795 — 5 entries recorded by a killed worker's batch were never counted."""
    import workers.counters as counters  # noqa: PLC0415
    import workers.jobs as jobs  # noqa: PLC0415

    items = [(f"17000000000{i:02d}-0", orjson.dumps(turn(i))) for i in range(5)]
    redis_client.hset(keys.batch("b1"), mapping={**dict(items), keys.BATCH_STREAM_FIELD: b"fixmem:turns"})
    ctx = configs.worker_context(redis_client, configs.fix_store(data_dir), name="w1")
    real_commit = counters.commit

    def killed(pipe: object, report: object, *, label_cap: int) -> None:
        raise _Crash

    monkeypatch.setattr(counters, "commit", killed)
    with pytest.raises(_Crash):
        jobs.run_batch(ctx, "b1")  # entries appended, then the worker dies before its counters
    monkeypatch.setattr(counters, "commit", real_commit)
    report = jobs.run_batch(ctx, "b1")  # the reaper's requeue runs it again
    assert len(configs.fix_store(data_dir).read("alice", "github.com/acme/widgets").entries) == 5
    assert report.events == {"recorded": 5}
    assert read_counters(redis_client).entries["fixed"] == 5


def _refuse_writes(client: redis.Redis, data_dir: Path) -> None:
    """Make Redis answer writes (and PING) with MISCONF, as when the disk under its data fills up."""
    (data_dir / "blocked.rdb").mkdir(exist_ok=True)  # the snapshot cannot be renamed onto a directory
    client.config_set("save", "3600 1")
    client.config_set("dbfilename", "blocked.rdb")
    client.bgsave()


def _accept_writes(client: redis.Redis) -> None:
    client.config_set("dbfilename", "dump.rdb")
    client.bgsave()
    wait_for(lambda: client.info("persistence")["rdb_last_bgsave_status"] == "ok", 30, "a good snapshot")


def test_the_consumer_and_workers_wait_out_a_redis_that_cannot_persist(tmp_path: Path) -> None:
    """Found by test_disk_full (a real full tmpfs under Redis's AOF): MISCONF killed the consumer (an
    uncaught ResponseError) and the worker (its work loop, then its PING while waiting to restart)."""
    server = EmbeddedRedis(data_dir=tmp_path / "redis", appendonly=False)
    url = server.start()
    client = redis.Redis.from_url(url, socket_timeout=5)
    data_dir = tmp_path / "data"
    try:
        with fleet(url, data_dir, tmp_path / "logs", workers=1, settings=FAST) as running:
            running.ready(client)
            publish_many(client, [turn(i) for i in range(5)])
            wait_for(lambda: _alice_entries(data_dir) == 5, 60, "the first entries")
            _refuse_writes(client, tmp_path / "redis")
            # each logged the refusal, waited its backoff and retried, still alive: two refusals each
            wait_for(lambda: running.log_text("c0").count("refuses writes") >= 2, 60, "the consumer to retry")
            wait_for(lambda: running.log_text("w0").count("refuses writes") >= 2, 60, "the worker to retry")
            crashed = running.crashes()
            _accept_writes(client)
            publish_many(client, [turn(i) for i in range(5, 10)])
            wait_for(lambda: _alice_entries(data_dir) == 10, 60, "the entries after Redis recovered")
    finally:
        client.close()
        server.stop()
    assert crashed == {}


def _alice_entries(data_dir: Path) -> int:
    return len(configs.fix_store(data_dir).read("alice", "github.com/acme/widgets").entries)


def test_tally_counts_what_an_earlier_attempt_wrote_as_recorded() -> None:
    """The pure rule behind the fix: a duplicate that was not in the logs before the batch's first
    attempt was written by that attempt; one that was there before is a real duplicate."""
    import workers.jobs as jobs  # noqa: PLC0415
    from store import AppendResult  # noqa: PLC0415

    (a, b, c) = jobs.decide(
        [(f"17000000000{i:02d}-0", orjson.dumps(turn(i))) for i in range(3)],
        enabled=True, limits=Limits(), max_bytes=1 << 20,
    )  # fmt: skip
    assert a.entry and b.entry and c.entry
    results = [AppendResult(added=[c.entry], duplicates=[a.entry.id, b.entry.id], dropped=[], quarantined=0)]
    report = jobs.tally([a, b, c], results, written_at=1.8e9, duration_seconds=0.1, present={a.entry.id})
    assert report.events == {"duplicate": 1, "recorded": 2}
    assert report.entries == {"fixed": 2}
