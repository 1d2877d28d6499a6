"""Stats over a parsed log (pure) and their JSON form."""

from __future__ import annotations

import json

from store.persist.fixlog import MalformedLine
from store.stats import compute_stats
from tests.store.factories import make_entry


def test_counts_ratios_tags_and_bounds() -> None:
    entries = [
        make_entry(1, outcome="fixed", ts=10.0).model_copy(update={"tags": ["python", "pytest", "python"]}),
        make_entry(2, outcome="fixed", ts=30.0).model_copy(update={"tags": ["python"]}),
        make_entry(3, outcome="partial", ts=20.0).model_copy(update={"tags": ["go"]}),
        make_entry(4, outcome="unverified", ts=5.0).model_copy(update={"tags": []}),
    ]
    stats = compute_stats(
        "/app",
        entries,
        malformed=[MalformedLine(7, "invalid JSON")],
        superseded={entries[0].id: entries[1].id},
        regressed={entries[1].id: entries[2].id},
        size_bytes=1234,
    )
    assert stats.total == 4
    assert stats.by_outcome == {"fixed": 2, "partial": 1, "unverified": 1}
    assert stats.ratios == {"fixed": 0.5, "partial": 0.25, "unverified": 0.25}
    assert stats.top_tags == [("python", 2), ("go", 1), ("pytest", 1)]  # a tag counts once per entry
    assert (stats.superseded, stats.regressed, stats.malformed) == (1, 1, 1)
    assert (stats.oldest_ts, stats.newest_ts, stats.bytes) == (5.0, 30.0, 1234)
    data = json.loads(json.dumps(stats.to_dict()))
    assert data["top_tags"][0] == ["python", 2]
    assert data["malformed_lines"] == [{"line_no": 7, "reason": "invalid JSON"}]


def test_empty_project() -> None:
    stats = compute_stats("/app", [], malformed=[], superseded={}, regressed={}, size_bytes=0)
    assert stats.total == 0 and stats.ratios == {"fixed": 0.0, "partial": 0.0, "unverified": 0.0}
    assert stats.oldest_ts is None and stats.newest_ts is None
    json.dumps(stats.to_dict())
