"""``fixmem backfill`` end to end: real Redis, a real consumer and real workers (processes), real files.

The pipeline processes (one ``fixmem ingest``, two ``fixmem worker``) run for the whole module on the
test-suite Redis; each test backfills under its own owner, so the entries of one test are not another's.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from rich.console import Console

from fixmem.cli import main
from ingest import keys
from ingest.backfill.checkpoint import Checkpoint
from ingest.backfill.plan import run_key
from ingest.backfill.progress import ProgressDisplay
from ingest.backfill.run import run_backfill
from store import FixEntry
from tests.configs import fix_store
from tests.ingest.backfill.support import config
from tests.ingest.importers.support import FIXTURES
from tests.polling import wait_for
from workers.counters import read_counters

ROOT = Path(__file__).resolve().parents[3]
CORPUS_EVENTS = 23  # events the importers read from tests/fixtures/agent-logs (checked in the first test)
CORPUS_FILES = 30  # with mini-swe-agent/report.json (not a log: walked, then skipped)


@dataclass(frozen=True)
class Pipeline:
    """The running pipeline: its Redis, data directory and environment."""

    url: str
    data_dir: Path
    env: dict[str, str]

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def entries(self, owner: str) -> dict[str, FixEntry]:
        """Every entry of ``owner``, by id, read from the logs on disk (a duplicate id fails the test)."""
        store = fix_store(self.data_dir)
        found: dict[str, FixEntry] = {}
        for project in store.projects(owner):
            for entry in store.read(owner, project).entries:
                assert entry.id not in found, f"entry {entry.id} is in the log twice"
                found[entry.id] = entry
        return found


def _fixmem(*args: str) -> list[str]:
    return [sys.executable, "-m", "fixmem", *args]


def _child(*args: str) -> list[str]:
    """A pipeline process as `fixmem up` starts it (`fixmem.cli.children`: starts quicker than the CLI)."""
    return [sys.executable, "-m", "fixmem.cli.children", *args]


@pytest.fixture(scope="module")
def pipeline(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    data_dir = tmp_path_factory.mktemp("backfill-data")
    logs = tmp_path_factory.mktemp("backfill-pipeline-logs")
    env = {
        **os.environ,
        "FIXMEM_REDIS_URL": redis_url,
        "FIXMEM_DATA_DIR": str(data_dir),
        "FIXMEM_READ_BLOCK_MS": "50",
        "PYTHONPATH": str(ROOT),
    }
    commands = [_child("ingest", "--name", "backfill-test")] + [_child("worker")] * 2
    procs = []
    for i, command in enumerate(commands):
        out = (logs / f"{i}.log").open("wb")
        procs.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT))
    try:
        yield Pipeline(redis_url, data_dir, env)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def env(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    """The in-process CLI talks to the module's pipeline."""
    monkeypatch.setenv("FIXMEM_REDIS_URL", pipeline.url)
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(pipeline.data_dir))
    monkeypatch.setenv("FIXMEM_BACKFILL_NICE", "0")  # in-process: do not renice the test session
    return pipeline


def backfill(*args: str) -> tuple[int, str]:
    """Run ``fixmem backfill`` in this process; returns the exit code and stdout."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["backfill", *args])
    return code, out.getvalue()


def backfill_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out = backfill(*args, "--json", "--timeout", "120")
    return code, json.loads(out)


def test_backfilling_the_corpus_twice_records_each_entry_once(env: Pipeline) -> None:
    code, first = backfill_json(str(FIXTURES), "--owner", "twice")
    assert code == 0, first
    assert first["files"]["walked"] == CORPUS_FILES
    assert (first["events"]["read"], first["events"]["published"]) == (CORPUS_EVENTS, CORPUS_EVENTS)
    assert set(first["formats"]) == {
        "aider",
        "claude-code",
        "codex",
        "mini-swe-agent",
        "openhands",
        "swe-agent",
    }
    pipe = first["pipeline"]
    assert pipe["settled"] and pipe["processed"] == CORPUS_EVENTS and pipe["in_failed_jobs"] == 0
    entries = env.entries("twice")
    assert pipe["entries_total"] == pipe["new_entries"] == len(entries) > 0
    assert sorted(pipe["entries"].items()) == sorted(_count(e.outcome for e in entries.values()).items())
    assert pipe["entries_total"] + sum(pipe["no_entry"].values()) + pipe["duplicate_events"] == CORPUS_EVENTS
    assert set(pipe["no_entry"]) <= {"skipped_no_files"}  # answer-only sessions touch no file
    assert Checkpoint(env.client(), first["run"]["key"]).load() == {}  # complete: the checkpoint is gone

    before = read_counters(env.client()).events
    code, second = backfill_json(str(FIXTURES), "--owner", "twice")
    assert code == 0, second
    assert second["files"]["resumed"] == 0 and second["events"]["published"] == CORPUS_EVENTS
    pipe2 = second["pipeline"]
    assert pipe2["entries"] == pipe["entries"] and pipe2["no_entry"] == pipe["no_entry"]
    assert (pipe2["new_entries"], pipe2["already_in_log"]) == (0, len(entries))
    after = read_counters(env.client()).events
    assert after["recorded"] - before["recorded"] == 0  # the workers saw every turn again ...
    assert after["duplicate"] - before["duplicate"] == len(entries)  # ... and recorded none twice
    assert env.entries("twice") == entries  # the same entries, once


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def test_an_interrupted_backfill_continues_where_it_stopped(env: Pipeline, tmp_path: Path) -> None:
    """Killed (SIGKILL), then stopped (Ctrl-C), then run to the end: every turn published exactly once."""
    client = env.client()
    owner = "interrupted"
    key = run_key([FIXTURES.as_posix()], format="auto", owner=owner, project=None, since=None)
    checkpoint = Checkpoint(client, key)
    args = ["backfill", str(FIXTURES), "--owner", owner, "--rate", "3", "--json", "--timeout", "120"]
    before = sum(read_counters(client).events.values())

    def published() -> int:
        return sum(len(r.sent) for r in checkpoint.load().values())

    killed = subprocess.Popen(_fixmem(*args), env=env.env, stdout=subprocess.PIPE, cwd=ROOT)
    wait_for(lambda: published() >= 3, 60, "the first run to publish")
    killed.kill()
    killed.wait()
    after_kill = published()
    assert 3 <= after_kill < CORPUS_EVENTS

    stopped = subprocess.Popen(_fixmem(*args), env=env.env, stdout=subprocess.PIPE, cwd=ROOT)
    wait_for(lambda: published() >= after_kill + 3, 60, "the second run to publish")
    stopped.send_signal(signal.SIGINT)
    out, _ = stopped.communicate(timeout=60)
    assert stopped.returncode == 130
    report = json.loads(out)
    assert report["run"]["interrupted"] and report["files"]["resumed"] >= 1
    after_stop = published()
    assert after_kill < after_stop < CORPUS_EVENTS

    code, final = backfill_json(str(FIXTURES), "--owner", owner)
    assert code == 0, final
    assert final["events"]["published"] == CORPUS_EVENTS and final["files"]["resumed"] >= 2
    assert final["events"]["published_by_earlier_runs"] == after_stop  # the rest was published now
    # every turn went through the pipeline once over the three runs: nothing was published twice
    wait_for(lambda: sum(read_counters(client).events.values()) - before == CORPUS_EVENTS, 60, "counters")
    assert final["pipeline"]["settled"]
    assert final["pipeline"]["entries_total"] == len(env.entries(owner)) > 0
    assert checkpoint.load() == {}


def _last_id(client: redis.Redis) -> Any:
    """The id of the last entry ever added to the backfill stream (None before the first)."""
    if not client.exists(keys.DEFAULT_BACKFILL_STREAM):
        return None
    return client.xinfo_stream(keys.DEFAULT_BACKFILL_STREAM)["last-generated-id"]


def test_a_dry_run_parses_and_reports_without_publishing(env: Pipeline) -> None:
    client = env.client()
    before = sum(read_counters(client).events.values())
    last_id = _last_id(client)  # (not XLEN: the consumer trims what it acknowledged meanwhile)
    code, report = backfill_json(str(FIXTURES), "--owner", "dry", "--dry-run")
    assert code == 0
    assert report["run"]["dry_run"] and report["pipeline"] is None
    assert report["events"]["published"] == CORPUS_EVENTS  # would be published
    assert _last_id(client) == last_id
    assert client.exists(keys.backfill_checkpoint(report["run"]["key"])) == 0
    assert sum(read_counters(client).events.values()) == before and env.entries("dry") == {}


def test_bad_files_are_reported_and_never_abort_the_run(env: Pipeline, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "swe-agent" / "6e44b9__sweagenttestrepo-1c2844.traj", tmp_path / "good.traj")
    good = (FIXTURES / "mini-swe-agent" / "django__django-16255.traj.json").read_bytes()
    (tmp_path / "cut.traj.json").write_bytes(good[: len(good) // 3])
    (tmp_path / "notes.txt").write_text("not a log\n")
    code, report = backfill_json(str(tmp_path), "--owner", "bad")
    assert code == 65, report
    (failed,) = report["failed"]
    assert failed["path"].endswith("cut.traj.json") and failed["status"] == "failed"
    assert failed["format"] == "mini-swe-agent" and failed["reason"]
    assert report["skipped"] == {
        "not an agent log (no known format)": {"files": 1, "paths": [(tmp_path / "notes.txt").as_posix()]}
    }
    assert report["pipeline"]["entries_total"] == 1 == len(env.entries("bad"))

    code, text = backfill(str(tmp_path), "--owner", "bad", "--timeout", "120")
    assert code == 65
    assert "failed: " in text and "cut.traj.json" in text and "mini-swe-agent" in text
    assert "skipped 1: not an agent log (no known format)" in text
    assert "(0 new, 1 already in the log)" in text


def test_since_in_the_future_publishes_nothing(env: Pipeline) -> None:
    code, report = backfill_json(str(FIXTURES), "--owner", "later", "--since", "2999-01-01")
    assert code == 0
    assert report["events"]["published"] == 0
    held = report["events"]["held_back"]["before --since"]
    skipped = report["skipped"].get("last modified before --since", {"files": 0})["files"]
    assert held + skipped > 0 and report["pipeline"] is None


def test_no_wait_publishes_and_leaves_the_pipeline_to_it(env: Pipeline) -> None:
    code, report = backfill_json(str(FIXTURES / "aider"), "--owner", "nowait", "--no-wait")
    assert code == 0 and report["pipeline"] is None and report["events"]["published"] == 6
    assert env.client().exists(keys.backfill_checkpoint(report["run"]["key"])) == 0
    wait_for(lambda: len(env.entries("nowait")) > 0, 60, "the entries")


def test_a_bad_since_is_a_usage_error(env: Pipeline) -> None:
    code, _ = backfill(str(FIXTURES), "--since", "yesterday")
    assert code == 2


def test_redis_unreachable_is_exit_69(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FIXMEM_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("FIXMEM_DATA_DIR", str(tmp_path))
    code, _ = backfill(str(FIXTURES / "aider"), "--owner", "x")
    assert code == 69


def test_a_wait_that_times_out_keeps_the_checkpoint_and_the_next_run_only_waits(
    env: Pipeline, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FIXMEM_BACKFILL_STREAM", "test:backfill:nobody-reads")  # no consumer here
    code, out = backfill(str(FIXTURES / "aider"), "--owner", "unread", "--json", "--timeout", "0.5")
    assert code == 75
    assert "no consumer reads test:backfill:nobody-reads" in capsys.readouterr().err
    report = json.loads(out)
    pipe = report["pipeline"]
    assert not pipe["settled"] and pipe["not_processed"] == 6 and pipe["no_entry"] == {"not_processed": 6}
    assert Checkpoint(env.client(), report["run"]["key"]).load() != {}  # kept: the next run only waits

    code, out = backfill(str(FIXTURES / "aider"), "--owner", "unread", "--json", "--timeout", "0.5")
    again = json.loads(out)
    assert code == 75 and again["events"]["published_by_earlier_runs"] == 6
    assert env.client().xlen("test:backfill:nobody-reads") == 6  # nothing published twice


def test_the_dry_run_progress_counts_the_parsed_events() -> None:
    """``--dry-run``'s progress bar said '0 events' to the end: only the publisher reported events."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system=None)
    with ProgressDisplay(console) as display:
        result = run_backfill(None, [FIXTURES], config("dry"), listener=display)
    assert sum(len(r.sent) for r in result.records) == display.events == CORPUS_EVENTS
    assert f"{CORPUS_FILES}/{CORPUS_FILES} files · {CORPUS_EVENTS} events" in out.getvalue()


def test_the_path_given_does_not_change_what_is_recorded(
    env: Pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "agent-logs"
    shutil.copytree(FIXTURES, logs)
    code, first = backfill_json(str(logs / "aider"), "--owner", "paths")
    assert code == 0 and first["pipeline"]["new_entries"] == 4, first
    entries = env.entries("paths")
    before = read_counters(env.client()).events
    monkeypatch.chdir(logs)  # `cd agent-logs && fixmem backfill .`
    code, second = backfill_json(".", "--owner", "paths")
    assert code == 0, second
    assert second["pipeline"]["already_in_log"] == 4 and second["pipeline"]["settled"]
    code, third = backfill_json(str(Path("aider") / "add-test.md"), "--owner", "paths")
    assert code == 0 and third["pipeline"]["new_entries"] == 0, third
    added = {i: e for i, e in env.entries("paths").items() if i not in entries}
    assert second["pipeline"]["new_entries"] == len(added) > 0  # the other formats' entries, once each
    assert not any(e.event_id in {x.event_id for x in entries.values()} for e in added.values())
    assert read_counters(env.client()).events["recorded"] - before["recorded"] == len(added)


def test_a_backfill_over_data_of_the_earlier_id_rule_adds_nothing(env: Pipeline, tmp_path: Path) -> None:
    legacy = FIXTURES.parent / "legacy-data" / "b6585f5" / "fix_memory"
    (owner_logs,) = legacy.glob("p-*")  # owner p: every fixture log under --project legacy
    shutil.copytree(owner_logs, env.data_dir / "fix_memory" / owner_logs.name)
    entries = env.entries("p")
    logs = tmp_path / "agent-logs"
    shutil.copytree(FIXTURES, logs)
    for path in logs.rglob("*"):  # the same files as the earlier run read (undated turns take the mtime)
        os.utime(path, (1767225600, 1767225600))
    before = read_counters(env.client()).events
    code, report = backfill_json(str(logs), "--owner", "p", "--project", "legacy")
    assert code == 0, report
    pipe = report["pipeline"]
    assert pipe["new_entries"] == 0 and pipe["settled"], pipe
    assert pipe["no_entry"].get("already in the fix log under an earlier id") == 6  # Aider 4, OpenHands 2
    after = env.entries("p")
    judged = {i for i, e in after.items() if e.outcome_source}  # the report.json beside mini-swe-agent logs
    unjudged = ("outcome", "outcome_source", "agent_outcome", "verdict", "verdicts")
    assert {i: e.model_dump(exclude=set(unjudged)) for i, e in after.items()} == {
        i: e.model_dump(exclude=set(unjudged)) for i, e in entries.items()
    }
    assert judged and {after[i].outcome_source for i in judged} == {"verdict:benchmark"}
    assert all(after[i].agent_outcome == entries[i].outcome for i in judged)
    assert read_counters(env.client()).events["recorded"] - before["recorded"] == 0


_TIMINGS = re.compile(r" in [0-9.]+s:|\([0-9.]+ files/s, [0-9.]+ events/s, [0-9.]+ MB/s\)")


def test_the_getting_started_sample_is_what_the_command_prints(
    env: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/getting-started.md's backfill sample, run: the same lines but for the timings."""
    text = (ROOT / "docs" / "getting-started.md").read_text()
    block = text.split("$ fixmem backfill tests/fixtures/agent-logs --owner alice", 1)[1].split("```", 1)[0]
    documented = block.strip().splitlines()[1:]  # after the command's own line
    monkeypatch.chdir(ROOT)
    code, out = backfill("tests/fixtures/agent-logs", "--owner", "docs-sample", "--timeout", "120")
    assert code == 0, out
    assert [_TIMINGS.sub("", line) for line in out.strip().splitlines()] == [
        _TIMINGS.sub("", line) for line in documented
    ]
