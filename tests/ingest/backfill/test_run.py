"""Running a backfill on a real Redis and real files: publishing, checkpoint, resume, backlog, following."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
import redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from ingest import keys
from ingest.backfill.checkpoint import Checkpoint
from ingest.backfill.follow import follow
from ingest.backfill.plan import SPECIAL
from ingest.backfill.records import BackfillError, Drain, FileRecord, FileStatus, RunResult
from ingest.backfill.run import run_backfill
from ingest.consumer import Consumer, Route
from ingest.importers import import_file
from tests import configs
from tests.ingest.backfill.support import config
from tests.ingest.importers.support import FIXTURES

ROOT = Path(__file__).resolve().parents[3]
STREAM = keys.DEFAULT_BACKFILL_STREAM
KEY = "test-run"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A copy of the importer fixtures (real logs of every format, plus licences and notes)."""
    root = tmp_path / "logs"
    shutil.copytree(FIXTURES, root)
    return root


def stream_events(client: redis.Redis, stream: str = STREAM) -> dict[str, bytes]:
    return {k.decode(): f[keys.EVENT_FIELD] for k, f in client.xrange(stream)}


def expected_events(root: Path) -> list[bytes]:
    """Every event the importers give for ``root``, as wire bytes."""
    wires = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        wires += [e.to_wire() for e in import_file(path, owner="tester").events]
    return wires


class Recorder:
    """A listener that records what it hears and can act after the n-th file."""

    def __init__(self, after: int | None = None, action: Callable[[], None] | None = None) -> None:
        self.files: list[FileRecord] = []
        self.events = 0
        self.messages: list[str | None] = []
        self.drains: list[Drain] = []
        self.after, self.action = after, action

    def started(self, files: int, total_bytes: int) -> None:
        self.total, self.total_bytes = files, total_bytes

    def file_done(self, record: FileRecord) -> None:
        self.files.append(record)
        if self.action is not None and len(self.files) == self.after:
            self.action()

    def published(self, events: int) -> None:
        self.events += events

    def waiting(self, message: str | None) -> None:
        self.messages.append(message)

    def following(self, drain: Drain) -> None:
        self.drains.append(drain)


def test_the_progress_total_is_the_bytes_the_files_advance_it_by(corpus: Path) -> None:
    """The display's bar (and ETA) runs over file sizes: its total once summed modification times."""
    recorder = Recorder()
    result = run_backfill(None, [corpus], config(), listener=recorder)
    assert recorder.total == len(result.records)
    assert recorder.total_bytes == sum(r.size for r in result.records) > 0


@pytest.mark.parametrize("processes", [1, 2])
def test_every_event_is_published_once_with_its_checkpoint(
    redis_client: redis.Redis, corpus: Path, processes: int
) -> None:
    result = run_backfill(
        redis_client, [corpus], config(parse_processes=processes, pool_min_bytes=0), run_key=KEY
    )
    in_stream = stream_events(redis_client)
    assert sorted(in_stream.values()) == sorted(expected_events(corpus))
    assert sorted(s.stream_id for s in result.sent) == sorted(in_stream)
    assert not result.interrupted
    stored = Checkpoint(redis_client, KEY).load()
    assert len(stored) == len(result.records) == sum(1 for p in corpus.rglob("*") if p.is_file())
    for record in result.records:  # the checkpoint holds exactly what was published, with stream ids
        assert stored[record.path].sent == record.sent
        for sent in record.sent:
            event = orjson.loads(in_stream[sent.stream_id])
            assert (event["owner"], event["project_key"], event["event_id"]) == sent[1:]
    assert redis_client.ttl(keys.backfill_checkpoint(KEY)) > 0


def test_an_interrupted_run_resumes_without_publishing_a_file_twice(
    redis_client: redis.Redis, corpus: Path
) -> None:
    stop = threading.Event()
    first = run_backfill(
        redis_client, [corpus], config(commit_events=1, parse_processes=2, pool_min_bytes=0), run_key=KEY,
        listener=Recorder(after=5, action=stop.set), stop=stop,
    )  # fmt: skip
    assert first.interrupted and 5 <= len(first.records) < 29
    published_first = len(stream_events(redis_client))
    assert published_first == len(first.sent)

    second = run_backfill(redis_client, [corpus], config(), run_key=KEY)
    resumed = [r for r in second.records if r.resumed]
    assert sorted(r.path for r in resumed) == sorted(r.path for r in first.records)
    in_stream = stream_events(redis_client)
    assert sorted(in_stream.values()) == sorted(expected_events(corpus))  # each event exactly once
    assert sorted(s.stream_id for s in second.sent) == sorted(in_stream)  # resumed files keep their ids


def test_a_file_that_changed_since_the_checkpoint_is_read_again(
    redis_client: redis.Redis, corpus: Path
) -> None:
    run_backfill(redis_client, [corpus], config(), run_key=KEY)
    touched = corpus / "aider" / "add-test.md"
    os.utime(touched, ns=(time.time_ns(), time.time_ns()))
    again = run_backfill(redis_client, [corpus], config(), run_key=KEY)
    fresh = [r for r in again.records if not r.resumed]
    assert [Path(r.path).name for r in fresh] == ["add-test.md"]
    assert len(stream_events(redis_client)) == len(expected_events(corpus)) + fresh[0].turns


def test_restart_forgets_the_checkpoint(redis_client: redis.Redis, corpus: Path) -> None:
    run_backfill(redis_client, [corpus], config(), run_key=KEY)
    again = run_backfill(redis_client, [corpus], config(), run_key=KEY, restart=True)
    assert not any(r.resumed for r in again.records)
    assert len(stream_events(redis_client)) == 2 * len(expected_events(corpus))


def test_a_file_bigger_than_one_call_is_recorded_with_all_its_ids(
    redis_client: redis.Redis, corpus: Path
) -> None:
    target = corpus / "aider" / "add-test.md"
    result = run_backfill(redis_client, [target], config(commit_events=1), run_key=KEY)
    (record,) = result.records
    assert record.turns == 3 and len(record.sent) == 3
    ids = [k.decode() for k, _ in redis_client.xrange(STREAM)]
    assert [s.stream_id for s in record.sent] == ids  # log order, every part's ids
    assert Checkpoint(redis_client, KEY).load()[record.path].sent == record.sent


def test_a_dry_run_touches_no_redis(redis_client: redis.Redis, corpus: Path) -> None:
    recorder = Recorder()
    result = run_backfill(None, [corpus], config(), listener=recorder)
    assert redis_client.dbsize() == 0
    assert sum(len(r.sent) for r in result.records) == len(expected_events(corpus))
    assert all(s.stream_id == "" for s in result.sent)
    # the progress counts the events that would be published (it said 0: only the publisher reported)
    assert recorder.events == len(expected_events(corpus)) > 0


def test_bad_files_cost_themselves_only(redis_client: redis.Redis, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    shutil.copy(FIXTURES / "swe-agent" / "6e44b9__sweagenttestrepo-1c2844.traj", root / "good.traj")
    good = (FIXTURES / "mini-swe-agent" / "django__django-16255.traj.json").read_bytes()
    (root / "truncated.traj.json").write_bytes(good[: len(good) // 2])
    (root / "binary.bin").write_bytes(bytes(range(256)) * 10)
    (root / "empty.jsonl").write_bytes(b"")
    session = (
        FIXTURES / "claude-code" / "-home-dev-src-invoicer" / "5f0c7a52-3d3e-4b8e-9a51-0d2f6c1e9b47.jsonl"
    )
    lines = session.read_bytes().splitlines(keepends=True)
    (root / "torn.jsonl").write_bytes(b"".join(lines[:-1]) + b'{"type": "user", "mess\n' + lines[-1])
    (root / "vanishes.traj").write_bytes(b"{}")
    os.mkfifo(root / "pipe")

    def remove() -> None:
        (root / "vanishes.traj").unlink()

    result = run_backfill(
        redis_client, [root], config(commit_events=1), run_key=KEY, listener=Recorder(after=1, action=remove)
    )
    by_name = {Path(r.path).name: r for r in result.records}
    assert by_name["good.traj"].status is FileStatus.IMPORTED
    assert by_name["truncated.traj.json"].status is FileStatus.FAILED
    assert "mini-swe-agent" in by_name["truncated.traj.json"].reason
    assert by_name["binary.bin"].status is FileStatus.SKIPPED
    assert by_name["empty.jsonl"].status is FileStatus.SKIPPED
    assert (by_name["pipe"].status, by_name["pipe"].reason) == (FileStatus.SKIPPED, SPECIAL)
    assert by_name["torn.jsonl"].status is FileStatus.PARTIAL and by_name["torn.jsonl"].turns >= 1
    assert by_name["vanishes.traj"].status is FileStatus.FAILED
    assert "cannot read file" in by_name["vanishes.traj"].reason
    published = by_name["good.traj"].sent + by_name["torn.jsonl"].sent
    assert sorted(stream_events(redis_client)) == sorted(s.stream_id for s in published)


def test_a_missing_path_or_unknown_format_is_refused_before_anything_is_sent(
    redis_client: redis.Redis, corpus: Path
) -> None:
    with pytest.raises(BackfillError, match="no such file"):
        run_backfill(redis_client, [corpus, corpus / "nope"], config())
    with pytest.raises(BackfillError, match="unknown format"):
        run_backfill(redis_client, [corpus], config(format="jsonl"))
    assert redis_client.dbsize() == 0


def test_since_skips_old_files_unread_and_holds_back_old_turns(
    redis_client: redis.Redis, corpus: Path
) -> None:
    old = corpus / "codex" / "plangate_sample_rollout.jsonl"
    os.utime(old, (1_000_000_000, 1_000_000_000))
    result = run_backfill(redis_client, [corpus], config(since=1_700_000_000.0))
    by_name = {Path(r.path).name: r for r in result.records}
    assert by_name[old.name].reason == "last modified before --since"
    handwritten = next(r for r in result.records if "handwritten" in r.path)
    assert handwritten.turns == handwritten.held_back + len(handwritten.sent)
    swe = by_name["6e44b9__sweagenttestrepo-1c2844.traj"]  # undated: judged by its (recent) file time
    assert swe.held_back == 0 and len(swe.sent) == 1


def consume(client: redis.Redis) -> Consumer:
    cfg = configs.consumer_config(
        routes=(Route(STREAM, keys.DEFAULT_BACKFILL_QUEUE, "backfill", by_project=False, job_max_events=3),),
        read_block_ms=10, claim_idle_seconds=600, trim_interval_seconds=3600, job_max_events=3,
        backpressure_jobs=1000,  # no worker drains the queue here: the consumer must keep reading
    )  # fmt: skip
    consumer = Consumer(client, cfg)
    consumer.setup()
    return consumer


def test_publishing_waits_while_the_consumer_is_too_far_behind(
    redis_client: redis.Redis, corpus: Path
) -> None:
    recorder = Recorder()
    results: list[RunResult] = []
    run = threading.Thread(
        target=lambda: results.append(
            run_backfill(redis_client, [corpus], config(max_backlog=4, commit_events=1), listener=recorder)
        )
    )
    run.start()
    deadline = time.monotonic() + 30
    while not any(recorder.messages) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any(m and "behind" in m for m in recorder.messages)
    assert redis_client.xlen(STREAM) <= 4  # never more than the backlog bound unread
    consumer = consume(redis_client)
    while run.is_alive() and time.monotonic() < deadline:
        consumer.cycle(block=False)
        time.sleep(0.02)
    run.join(timeout=1)
    assert not run.is_alive() and len(results[0].sent) == len(expected_events(corpus))


def test_follow_reports_each_stage_until_settled(redis_client: redis.Redis, corpus: Path) -> None:
    result = run_backfill(redis_client, [corpus], config())
    ids = [s.stream_id for s in result.sent]
    follow_ = dict(stream=STREAM, group=keys.DEFAULT_GROUP, queue=keys.DEFAULT_BACKFILL_QUEUE)
    tracker_state = follow(redis_client, ids, timeout=0, **follow_)  # type: ignore[arg-type]
    assert len(tracker_state.unread) == len(ids) and not tracker_state.settled

    consumer = consume(redis_client)
    while consumer.cycle(block=False):
        pass
    state = follow(redis_client, ids, timeout=0, **follow_)  # type: ignore[arg-type]
    assert (len(state.unread), len(state.pending), len(state.queued)) == (0, 0, len(ids))
    assert state.processed == 0

    batches = sorted(k.decode() for k in redis_client.scan_iter(match=keys.batch("*")))
    failed_job = batches[0].removeprefix(keys.batch(""))
    named = {keys.BATCH_STREAM_FIELD.decode(), keys.BATCH_RUNS_FIELD.decode()}
    failed_ids = {k.decode() for k in redis_client.hkeys(batches[0])} - named
    FailedJobRegistry(keys.DEFAULT_BACKFILL_QUEUE, connection=redis_client, serializer=JSONSerializer).add(
        _job(redis_client, failed_job), ttl=600
    )
    for name in batches[1:]:  # what a worker does when a batch is done
        redis_client.delete(name)
    recorder = Recorder()
    state = follow(redis_client, ids, timeout=5, listener=recorder, **follow_)  # type: ignore[arg-type]
    assert state.settled and state.failed == failed_ids
    assert state.processed == len(ids) - len(failed_ids)
    assert recorder.drains[-1] == state


def _job(client: redis.Redis, job_id: str) -> Job:
    return Job.fetch(job_id, connection=client, serializer=JSONSerializer)


class HoldAfter(Recorder):
    """A listener that holds the run once ``events`` are published, until the test lets it go on."""

    def __init__(self, events: int) -> None:
        super().__init__()
        self.hold_at = events
        self.held, self.go_on = threading.Event(), threading.Event()

    def published(self, events: int) -> None:
        super().published(events)
        if self.events >= self.hold_at and not self.held.is_set():
            self.held.set()
            self.go_on.wait(timeout=30)


def test_publishing_waits_while_too_many_backfill_jobs_wait_for_a_worker(
    redis_client: redis.Redis, corpus: Path
) -> None:
    """Unread events and queued jobs both hold events in Redis: the run bounds both."""
    cfg = config(max_backlog=1000, max_queued_jobs=2, commit_events=1)
    consumer = consume(redis_client)  # jobs of at most 3 events
    recorder = HoldAfter(events=3 * (cfg.max_queued_jobs + 1))  # enough for more than max_queued_jobs jobs
    assert recorder.hold_at < len(expected_events(corpus))  # so the run publishes again after the hold
    results: list[RunResult] = []
    run = threading.Thread(
        target=lambda: results.append(run_backfill(redis_client, [corpus], cfg, listener=recorder))
    )
    queue = Queue(keys.DEFAULT_BACKFILL_QUEUE, connection=redis_client, serializer=JSONSerializer)
    run.start()
    deadline = time.monotonic() + 30
    assert recorder.held.wait(timeout=30)
    # the barrier: the run publishes again only once the consumer has built the jobs it must wait for
    while queue.count <= cfg.max_queued_jobs and time.monotonic() < deadline:
        consumer.cycle(block=False)
    assert queue.count > cfg.max_queued_jobs
    recorder.go_on.set()
    while not any(m and "wait for a worker" in m for m in recorder.messages) and time.monotonic() < deadline:
        time.sleep(0.02)
    waits = [
        int(m.split()[0]) for m in recorder.messages if m and m.endswith("backfill jobs wait for a worker")
    ]
    assert waits and min(waits) > cfg.max_queued_jobs
    assert run.is_alive() and len(stream_events(redis_client)) < len(expected_events(corpus))
    while run.is_alive() and time.monotonic() < deadline:  # workers take the jobs: publishing goes on
        consumer.cycle(block=False)
        queue.empty()
        time.sleep(0.02)
    run.join(timeout=1)
    assert not run.is_alive() and len(results[0].sent) == len(expected_events(corpus))


_SLOW_RUN = """
import sys
from pathlib import Path
import redis
from ingest.backfill.run import run_backfill
from tests.ingest.backfill.support import config
run_backfill(
    redis.Redis.from_url(sys.argv[1]), [Path(sys.argv[2])],
    config(rate=2.0, parse_processes=2, pool_min_bytes=0), run_key="killed",
)
"""


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_parse_processes_exit_when_the_backfill_is_killed(
    redis_url: str, redis_client: redis.Redis, corpus: Path
) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_RUN, redis_url, str(corpus)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:  # the pool (and its tracker)
            time.sleep(0.05)
        while not redis_client.exists(keys.backfill_checkpoint("killed")) and time.monotonic() < deadline:
            time.sleep(0.05)
        children = _children(proc.pid)
        assert len(children) >= 2
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 15
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(c) for c in children), "parse processes outlived their killed parent"
