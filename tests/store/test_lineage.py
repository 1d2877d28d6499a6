"""Lineages by the turns' time (``store.lineage``): the newest of a lineage is the one with the latest
``ts`` (ties: id), whatever order the lines arrived in."""

from __future__ import annotations

from pathlib import Path

from store import FixStore
from tests.store.factories import OWNER, PROJECT, make_entry

DAY = 86_400.0
OLD_TS = 1_783_296_000.0  # 2026-07-06
NEW_TS = OLD_TS + 70 * DAY  # 2026-09-14
TASK = "fix the login timeout in the session refresh"


def _turns() -> tuple:  # type: ignore[type-arg]
    old = make_entry("old", TASK, files=["src/auth.py"], ts=OLD_TS, solution="raise the timeout to 30 s")
    new = make_entry("new", TASK, files=["src/auth.py"], ts=NEW_TS, solution="refresh the token before expiry")
    return old, new


def test_a_late_replay_of_an_older_turn_does_not_hide_the_newer_fix(data_dir: Path) -> None:
    old, new = _turns()
    store = FixStore(data_dir, cap=50)
    store.append(OWNER, PROJECT, [new])
    store.append(OWNER, PROJECT, [old])  # the backfill arrives late

    for reader in (store, FixStore(data_dir, cap=50)):  # the warm view and a cold parse
        found = reader.recall(OWNER, PROJECT, TASK, now=NEW_TS)
        assert [r.entry.id for r in found] == [new.id]
        assert [e.id for e in reader.lineage(OWNER, PROJECT, old.id)] == [old.id, new.id]
        assert reader.stats(OWNER, PROJECT).superseded == 1
