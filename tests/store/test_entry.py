"""The entry contract: ids are content hashes of (owner, project, event), unknown fields survive."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from store.entry import ENTRY_ID_PATTERN, FixEntry, entry_id


def test_entry_id_is_deterministic_and_shaped() -> None:
    first = entry_id("alice", "/home/u/app", "ev-1")
    assert first == entry_id("alice", "/home/u/app", "ev-1")
    assert re.match(ENTRY_ID_PATTERN, first)


def test_entry_id_separates_owner_project_and_event() -> None:
    ids = {
        entry_id("alice", "/app", "ev-1"),
        entry_id("bob", "/app", "ev-1"),
        entry_id("alice", "/app2", "ev-1"),
        entry_id("alice", "/app", "ev-2"),
        entry_id("a", "lice/app", "ev-1"),
    }
    assert len(ids) == 5


def test_unknown_fields_survive_a_round_trip() -> None:
    line = {
        "id": "fix-0123456789abcdef", "ts": 1.0, "project": "p", "task": "t", "files": ["a.py"],
        "symbols": [], "errors": [], "tests": None, "outcome": "unverified", "solution": "", "tags": [],
        "reviewer": "carol",
    }  # fmt: skip
    entry = FixEntry.model_validate(line)
    dumped = entry.model_dump()
    assert dumped["reviewer"] == "carol"
    assert dumped["commit"] is None and dumped["supersedes"] is None


@pytest.mark.parametrize("ts", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_times_are_refused(ts: float) -> None:
    # orjson would write them as null: a line no reader could load back.
    line = {
        "id": "fix-0123456789abcdef", "ts": ts, "project": "p", "task": "t", "files": [], "symbols": [],
        "errors": [], "tests": None, "outcome": "unverified", "solution": "", "tags": [],
    }  # fmt: skip
    with pytest.raises(ValidationError, match="finite"):
        FixEntry.model_validate(line)
