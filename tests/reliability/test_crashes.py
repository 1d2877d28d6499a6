"""SIGKILL the consumer and the workers at random points while events flow: nothing lost, nothing twice.

The fleet is the shipped processes (``fixmem.cli.children ingest|worker``); a publisher thread sends valid
turns (entries and skips) with a few malformed ones (dead letters) at a steady rate; meanwhile a random member
is SIGKILLed and restarted, again and again. Then, within 60 s of the last kill, every published event
must have exactly one outcome: one entry in its project's log, one ``skipped_*`` count, or one dead
letter — counted from the logs' raw lines, the dead-letter stream and the fleet counters.

Fast variant (normal suite): 500 events, 4 kills, shortened lease/reclaim clocks. Full run
(``pytest -m chaos``): 10,000 events, 20 kills, the shipped clocks.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from ingest import keys
from tests.reliability.corpus import MALFORMED, Item, valid
from tests.reliability.fleet import FAST, SHIPPED, Fleet, fleet
from tests.reliability.ledger import Settlement, settle
from tests.reliability.publisher import Pacer

PROMISE_SECONDS = 60.0
CHEAP_BAD = [k for k in MALFORMED if k not in {"output_10mb", "deep_nesting_json"}]


def workload(events: int, *, seed: int) -> list[Item]:
    """``events`` items: valid turns (4/5 entries, 1/5 skips) with one malformed event in 50."""
    rng = random.Random(seed)
    items: list[Item] = []
    for i in range(events):
        if i % 50 == 25:
            kind = rng.choice(CHEAP_BAD)
            maker, fate, reason = MALFORMED[kind]
            items.append(Item(kind, maker(i), fate, reason))
        else:
            items.append(valid(i, run=f"crash{seed}"))
    return items


@dataclass
class Kill:
    """One kill: when (seconds into the run), whom, and what it had in hand."""

    at: float
    victim: str
    busy: bool  # a worker with a job started, or the consumer with entries pending


def _busy(client: redis.Redis, running: Fleet, victim: str) -> bool:
    """Whether ``victim`` holds work now: the consumer entries pending, a worker a started job."""
    if victim.startswith("c"):
        try:
            consumers = client.xinfo_consumers(keys.DEFAULT_STREAM, keys.DEFAULT_GROUP)
        except redis.exceptions.ResponseError:
            return False
        return any(c["name"] == victim.encode() and int(c["pending"]) for c in consumers)
    proc = running.members[victim].process
    if proc is None:
        return False
    tag = f"-{proc.pid}-".encode()
    for member in client.zrange("rq:wip:" + keys.DEFAULT_LIVE_QUEUE, 0, -1):
        holder = client.hget(b"rq:execution:" + member, "worker_name")
        if holder and tag in holder:
            return True
    return False


def run_kills(
    running: Fleet, client: redis.Redis, *, kills: int, window: float, seed: int
) -> tuple[list[Kill], float]:
    """SIGKILL a random member ``kills`` times spread over ``window`` seconds, restarting each at once.

    Each kill waits up to 1 s for the victim to hold work (pending entries, a started job), so most
    kills land mid-batch rather than between batches.

    Returns the kills and the monotonic time of the last one.
    """
    rng = random.Random(seed)
    started = time.monotonic()
    times = sorted(rng.uniform(1.0, window) for _ in range(kills))
    names = list(running.members)
    done: list[Kill] = []
    last = started
    for at in times:
        delay = started + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        victim = names[0] if rng.random() < 1 / 3 else rng.choice(names[1:])  # c0 first, then workers
        aim = time.monotonic() + 1.0  # aim at a moment the victim holds work, if one comes soon
        while not (busy := _busy(client, running, victim)) and time.monotonic() < aim:
            time.sleep(0.005)
        running.kill(victim)
        last = time.monotonic()
        done.append(Kill(round(last - started, 1), victim, busy))
        time.sleep(rng.uniform(0.0, 1.0))
        running.restart(victim)
    return done, last


@dataclass
class CrashRun:
    """What a crash run did and found; times in seconds from the start of publishing."""

    outcome: Settlement
    kills: list[Kill]
    fleet: Fleet
    published_at: float  # when the last event was acknowledged
    last_kill_at: float
    settled_at: float | None  # when every event had its outcome (None: not within the wait)
    trace: list[str]  # after the last kill: time, events without an outcome, jobs queued/running

    @property
    def took(self) -> float:
        """Seconds from the last kill until every event had its one outcome (inf if never)."""
        return float("inf") if self.settled_at is None else self.settled_at - self.last_kill_at

    def report(self) -> str:
        """The printed figures of the run."""
        busy = sum(k.busy for k in self.kills)
        consumer = sum(k.victim.startswith("c") for k in self.kills)
        return (
            f"\n{len(self.kills)} SIGKILLs ({consumer} consumer, {len(self.kills) - consumer} workers; "
            f"{busy} caught holding work) at {[k.at for k in self.kills]} s\n"
            f"{self.outcome.summary()}\npublishing ended at {self.published_at:.1f}s, last kill at "
            f"{self.last_kill_at:.1f}s, every event settled {self.took:.1f}s after the last kill; "
            f"crashes besides the kills: {self.fleet.crashes() or 'none'}\n"
            f"after the last kill (s, unsettled, queued, running): {' '.join(self.trace)}"
        )


def diagnose(client: redis.Redis) -> str:
    """Where unfinished work sits: batch hashes left, RQ registries, failed jobs' errors, stream pending."""
    queue = keys.DEFAULT_LIVE_QUEUE
    lines = [
        f"batches left {len(client.keys(keys.batch('*')))}, queued {client.llen('rq:queue:' + queue)}, "
        f"intermediate {client.llen('rq:queue:' + queue + ':intermediate')}, "
        f"running {client.zcard('rq:wip:' + queue)}, scheduled {client.zcard('rq:scheduled:' + queue)}, "
        f"failed {client.zcard('rq:failed:' + queue)}"
    ]
    try:
        pending = client.xpending(keys.DEFAULT_STREAM, keys.DEFAULT_GROUP)["pending"]
    except redis.exceptions.ResponseError:
        pending = "?"
    lines.append(f"stream pending {pending}")
    for job_id in client.zrange("rq:failed:" + queue, 0, 5) + client.zrange("rq:scheduled:" + queue, 0, 5):
        job = client.hgetall(b"rq:job:" + job_id)
        results = client.xrevrange(b"rq:results:" + job_id, count=1)
        error = results[0][1].get(b"exc_string", b"")[-400:] if results else b""
        lines.append(f"job {job_id.decode()}: status {job.get(b'status')}, retries left "
                     f"{job.get(b'retries_left')}: {error.decode(errors='replace')}")  # fmt: skip
    return "\n".join(lines)


def _unsettled(outcome: Settlement) -> int:
    return outcome.lost + outcome.duplicated + len(outcome.dead_wrong_reason) + abs(outcome.uncounted)


def crash_run(
    redis_url: str,
    client: redis.Redis,
    data_dir: Path,
    log_dir: Path,
    *,
    events: int,
    kills: int,
    rate: float,
    workers: int,
    settings: dict[str, str],
    seed: int,
) -> CrashRun:
    """Publish ``events`` at ``rate``/s under ``kills`` random SIGKILLs, then wait for every outcome."""
    items = workload(events, seed=seed)
    with fleet(redis_url, data_dir, log_dir, workers=workers, settings=settings) as running:
        running.ready(client)
        started = time.monotonic()
        pacer = Pacer(redis_url, items, rate=rate).start()
        done, last_kill = run_kills(running, client, kills=kills, window=events / rate, seed=seed)
        pacer.join(timeout=events / rate + 120)
        published_at = pacer.finished_at - started
        if not done:  # a baseline without kills: time the drain from the end of publishing
            last_kill = pacer.finished_at
        trace: list[str] = []
        settled_at = None
        deadline = time.monotonic() + PROMISE_SECONDS + 60
        next_trace = 0.0
        while time.monotonic() < deadline:
            running.check()
            outcome = settle(pacer.published, client, data_dir)
            now = time.monotonic()
            if outcome.settled and outcome.uncounted <= 0:
                settled_at = now - started
                break
            if now >= next_trace:
                queue = "rq:queue:" + keys.DEFAULT_LIVE_QUEUE
                trace.append(
                    f"{now - last_kill:.0f}:{_unsettled(outcome)}/{client.llen(queue)}"
                    f"/{client.zcard('rq:wip:' + keys.DEFAULT_LIVE_QUEUE)}"
                )
                next_trace = now + 5
            time.sleep(0.5)
        if settled_at is None:
            trace.append("\n" + diagnose(client))
    return CrashRun(outcome, done, running, published_at, last_kill - started, settled_at, trace)


def _check(run: CrashRun) -> None:
    outcome = run.outcome
    assert outcome.settled, (
        f"missing entries {outcome.entries_missing[:5]}, missing dead letters {outcome.dead_missing[:5]}, "
        f"unexpected dead letters {outcome.dead_unexpected[:5]}, "
        f"wrong reasons {outcome.dead_wrong_reason[:5]}"
    )
    assert outcome.lost == 0 and outcome.duplicated == 0
    assert outcome.uncounted == 0, (
        f"{outcome.uncounted} events counted {'never' if outcome.uncounted > 0 else 'twice'}"
    )
    # The fleet counters match the logs: no entry a killed worker wrote goes uncounted.
    assert outcome.counters.get("recorded") == outcome.expected.get("entry")
    assert outcome.counters.get("duplicate", 0) == 0
    assert run.took <= PROMISE_SECONDS
    assert run.fleet.crashes() == {}


def test_sigkills_under_flow_lose_and_duplicate_nothing(
    redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    run = crash_run(
        redis_url, redis_client, data_dir, tmp_path / "logs",
        events=500, kills=4, rate=125, workers=2, settings=dict(FAST), seed=8,
    )  # fmt: skip
    print(run.report())
    _check(run)


@pytest.mark.chaos
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kills", [20, 0], ids=["20-kills", "baseline-no-kills"])
def test_chaos_20_sigkills_while_10000_events_flow(
    kills: int, redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    run = crash_run(
        redis_url, redis_client, data_dir, tmp_path / "logs",
        events=10_000, kills=kills, rate=100, workers=2, settings=dict(SHIPPED), seed=2024,
    )  # fmt: skip
    print(run.report())
    _check(run)
