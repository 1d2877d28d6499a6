"""Sessions whose turns make no entry still count for impact (issue 31, intention to treat): ``decide``
keeps their record, and on a real Redis, the real consumer and RQ worker and real files, ``fixmem impact``
counts a holdback session that never edited a file beside a memory session that fixed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from fixmem import service, wiring
from fixmem.cli import main
from fixmem.settings import Settings
from ingest import keys
from ingest.consumer import Consumer
from ingest.publish import publish_many
from ingest.schema import parse_event
from store import StoreUnavailable
from tests import configs
from tests.configs import fix_store
from tests.ingest.turns import turn, wire
from workers.extraction import Limits
from workers.jobs import decide, install, run_batch
from workers.worker import run_worker

PROJECT = "github.com/acme/widgets"
SHOWN = "fix-00000000000000aa"


def _in_session(event: dict[str, Any], session: str, arm: str, *, followed: bool = False) -> dict[str, Any]:
    kind = "injected" if arm == "memory" else "shadow"
    recall = {"arm": arm, kind: [{"id": SHOWN, "surface": "harness", "tier": "close"}]}
    recall["followed"] = [SHOWN] if followed else []
    event["harness_meta"] = {**event["harness_meta"], "session_id": session, "recall": recall}
    return event


def test_decide_keeps_the_record_of_a_turn_that_made_no_entry() -> None:
    items = [
        ("1-0", wire(_in_session(turn(1, kind="no_files"), "s-held", "holdback", followed=True))),
        ("2-0", wire(_in_session(turn(2), "s-mem", "memory"))),  # an entry: its record rides on it
        ("3-0", wire(turn(3, kind="no_files"))),  # no impact record: nothing to keep
    ]
    held, fixed, plain = decide(items, enabled=True, limits=Limits(), max_bytes=1 << 20)
    assert held.skip == "skipped_no_files" and held.session is not None
    assert (held.session.session, held.session.arm, held.session.shadow) == ("s-held", "holdback", (SHOWN,))
    assert held.session.followed == (SHOWN,) and held.session.project == PROJECT
    assert fixed.entry is not None and fixed.session is None and plain.session is None
    [off] = decide(items[:1], enabled=False, limits=Limits(), max_bytes=1 << 20)
    assert off.skip == "skipped_disabled" and off.session is None  # the memory off writes nothing


@pytest.fixture
def settings(redis_url: str, data_dir: Path) -> Iterator[Settings]:
    yield Settings.from_env(
        {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_READ_BLOCK_MS": "20"}
    )
    install(None)


def _drain(settings: Settings, client: redis.Redis) -> None:
    Consumer(client, wiring.consumer_config(settings, name="c1")).run(burst=True)
    install(wiring.worker_context(settings, client))
    run_worker(client, wiring.worker_options(settings), burst=True)


def _impact(settings: Settings, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    argv = ["impact", "--owner", "alice", "--data-dir", str(settings.data_dir), "--since", "5000w", "--json"]
    capsys.readouterr()
    assert main([*argv, *args]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_a_holdback_session_that_never_edits_counts_beside_a_memory_session_that_fixes(
    settings: Settings, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    held = [_in_session(turn(i, kind="no_files"), "s-held", "holdback") for i in (1, 2)]
    memory = [_in_session(turn(3, kind="no_files"), "s-mem", "memory")]
    memory.append(_in_session(turn(4), "s-mem", "memory", followed=True))  # then it edits and fixes
    publish_many(redis_client, [*held, *memory])
    _drain(settings, redis_client)
    got = _impact(settings, capsys)
    arms = got["arms"]
    assert got["sessions"] == 2  # the entries alone know one session: the memory one
    assert (arms["memory"]["sessions"], arms["memory"]["fixed"], arms["memory"]["no_entry"]) == (1, 1, 0)
    assert (arms["holdback"]["sessions"], arms["holdback"]["fixed"], arms["holdback"]["no_entry"]) == (
        1,
        0,
        1,
    )
    assert arms["holdback"]["shown"] == 1 and arms["holdback"]["no_entry_ratio"] == 1.0
    assert got["lift"]["outcome"]["difference"] == 1.0
    assert _impact(settings, capsys, "--project", PROJECT)["sessions"] == 2

    publish_many(redis_client, held)  # a harness retried: the same turns again
    _drain(settings, redis_client)
    assert _impact(settings, capsys)["arms"]["holdback"]["sessions"] == 1
    files = list(settings.data_dir.rglob("*.sessions.json"))
    assert len(files) == 1 and b"parse_mod1" not in files[0].read_bytes()  # ids, never the turn's text


def test_a_project_whose_sessions_never_made_an_entry_is_reported(
    settings: Settings, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    publish_many(redis_client, [_in_session(turn(1, kind="no_files", project="p/quiet"), "s1", "holdback")])
    _drain(settings, redis_client)
    assert _impact(settings, capsys)["arms"]["holdback"]["no_entry"] == 1
    assert _impact(settings, capsys, "--project", "p/quiet")["sessions"] == 1


def test_the_local_publisher_keeps_them_too(data_dir: Path) -> None:
    """Without Redis (``service.record``, what the Stop publisher runs locally): the same record."""
    store = fix_store(data_dir)
    events = [
        parse_event(wire(_in_session(turn(1, kind="no_files"), "s-held", "holdback"))),
        parse_event(wire(turn(2))),
    ]
    assert [e is None for e in service.record(store, events)] == [True, False]
    [record] = store.sessions("alice", PROJECT)
    assert (record.session, record.arm, record.shadow) == ("s-held", "holdback", (SHOWN,))


def test_a_store_error_writing_the_records_retries_the_batch_which_then_counts_once(
    redis_client: redis.Redis, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = configs.worker_context(redis_client, fix_store(data_dir), name="w1")
    events = [wire(_in_session(turn(1, kind="no_files"), "s-held", "holdback")), wire(turn(2))]
    redis_client.hset(
        keys.batch("b1"),
        mapping={"1700000000001-0": events[0], "1700000000002-0": events[1], keys.BATCH_STREAM_FIELD: b"t"},
    )

    def full(*args: object, **kwargs: object) -> int:
        raise StoreUnavailable(data_dir, "no space left on device")

    monkeypatch.setattr(ctx.store, "record_sessions", full)
    with pytest.raises(StoreUnavailable):
        run_batch(ctx, "b1")
    assert redis_client.exists(keys.batch("b1"))  # kept for the retry
    monkeypatch.undo()
    assert run_batch(ctx, "b1").events == {"recorded": 1, "skipped_no_files": 1}
    assert [r.session for r in ctx.store.sessions("alice", PROJECT)] == ["s-held"]
