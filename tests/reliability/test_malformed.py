"""Malformed events of every kind, mixed with valid ones: nothing crashes, each bad one is dead-lettered
with its reason, every valid one is recorded — and hostile-but-valid names stay inside ``fix_memory/``.

Kinds (``corpus.MALFORMED``): invalid JSON (truncated, garbage, empty), invalid UTF-8, raw NUL bytes, NUL in
names, wrong types, missing fields, a missing ``event`` field, ``v: 2``, not an object, 100,000-deep
nesting, ``..`` / ``/`` / 5 kB owners and project keys, a negative ``ts``, 10 MB outputs. Valid but hostile
(``corpus.HOSTILE_VALID``): ``../../../../etc/passwd``, ``/`` and ``.`` as project keys, unicode and 4 kB
names, NUL in a message, a turn of 10,000 tool events and one nested 200 levels deep.

Fast variant: 1,000 malformed + 300 valid through an in-process consumer and worker (any exception fails
the test). Full run (``-m chaos``): 10,000 malformed + 2,000 valid through the shipped processes.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest
import redis

from fixmem import wiring
from fixmem.settings import Settings
from ingest.consumer import Consumer
from tests.reliability.corpus import HOSTILE_VALID, MALFORMED, mixed
from tests.reliability.fleet import FAST, fleet, wait_for
from tests.reliability.ledger import Published, Settlement, settle
from tests.reliability.publisher import publish_all
from workers.jobs import install
from workers.worker import run_worker

SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def _check(published: list[Published], outcome: Settlement, tmp_path: Path, data_dir: Path) -> None:
    kinds = collections.Counter(p.item.kind for p in published)
    print(
        f"\n{outcome.summary()}\nkinds: {len(MALFORMED)} malformed, {len(HOSTILE_VALID) + 2} hostile-valid; "
        f"dead letters by reason {dict(sorted(outcome.dead_by_reason.items()))}\n"
        f"published by kind: {dict(sorted(kinds.items()))}"
    )
    assert outcome.settled, (
        f"missing entries {outcome.entries_missing[:5]}, missing dead letters {outcome.dead_missing[:5]}, "
        f"unexpected dead letters {outcome.dead_unexpected[:5]}, "
        f"wrong reasons {outcome.dead_wrong_reason[:5]}"
    )
    # Every file is fix_memory/<owner>/<project file>, named in [A-Za-z0-9._-] — whatever the names were.
    parts = [p.relative_to(data_dir).parts for p in data_dir.rglob("*") if p.is_file()]
    misplaced = [p for p in parts if len(p) != 3 or p[0] != "fix_memory" or not all(map(SAFE.fullmatch, p))]
    assert misplaced == [], misplaced
    assert not list(tmp_path.rglob("passwd")) and not list(tmp_path.rglob("etc"))


def test_malformed_events_are_dead_lettered_and_valid_ones_recorded(
    redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    settings = Settings.from_env(
        {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_STORE_LOCK": "local"}
    )
    published = publish_all(redis_client, mixed(1_000, 300, seed=5, heavy=1))
    Consumer(redis_client, wiring.consumer_config(settings)).run(burst=True)
    install(wiring.worker_context(settings, redis_client))
    try:
        run_worker(redis_client, wiring.worker_options(settings), burst=True)
    finally:
        install(None)
    _check(published, settle(published, redis_client, data_dir), tmp_path, data_dir)


@pytest.mark.chaos
@pytest.mark.timeout(1800)
def test_chaos_10000_malformed_events_among_valid_ones(
    redis_url: str, redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    published = publish_all(redis_client, mixed(10_000, 2_000, seed=10))
    outcome = settle(published, redis_client, data_dir)
    with fleet(redis_url, data_dir, tmp_path / "logs", workers=2, settings=FAST) as running:

        def done() -> bool:
            nonlocal outcome
            outcome = settle(published, redis_client, data_dir)
            return outcome.settled

        try:
            wait_for(done, 900, "every event's outcome", every=2)
        finally:
            crashes = running.crashes()
    assert crashes == {}, f"processes died on their own: {crashes}"
    _check(published, outcome, tmp_path, data_dir)
