"""Rotation with slack: lines past the cap stay on disk until cap + slack, readers rotate, and the store
answers exactly what it answers without slack (appends, verdicts, forget, reads, stats, recall)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import FixStore
from store.entry import OUTCOMES, FixEntry
from store.paths import project_files
from store.verdicts import Verdict
from tests.store.factories import OWNER, PROJECT, make_entry

COMPONENTS = ("login form", "csv parser", "cache layer", "billing job")


def _entry(n: int, outcome: str, day: int) -> FixEntry:
    component = COMPONENTS[n % len(COMPONENTS)]
    return make_entry(
        n, f"fix the {component} crash number {n % 3}", files=[f"src/{component.replace(' ', '_')}.py"],
        errors=[f"ValueError: {component} broke"] if n % 2 else [], outcome=outcome,  # type: ignore[arg-type]
        ts=1_700_000_000 + day * 3600 + n,
    )  # fmt: skip


def _lines(store: FixStore) -> int:
    log = project_files(store.root, OWNER, PROJECT).log
    return len(log.read_bytes().splitlines()) if log.exists() else 0


def _answers(store: FixStore) -> dict[str, Any]:
    """Everything a reader can ask, from a fresh store (nothing cached)."""
    fresh = FixStore(store.data_dir, cap=store.cap)
    stats = fresh.stats(OWNER, PROJECT).to_dict()
    stats.pop("bytes")  # the file holds the lines past the cap too
    return {
        "entries": [e.model_dump() for e in fresh.read(OWNER, PROJECT).entries],
        "stats": stats,
        "summaries": fresh.summaries(OWNER),
        "projects": fresh.projects(OWNER),
        "recall": [
            (r.entry.id, r.score) for r in fresh.recall(OWNER, PROJECT, "the csv parser crash", now=2e9)
        ],
    }


def _apply(store: FixStore, op: tuple[Any, ...]) -> object:
    kind = op[0]
    if kind == "append":
        result = store.append(OWNER, PROJECT, [_entry(n, o, d) for n, o, d in op[1]])
        return (
            [e.model_dump() for e in result.added], result.duplicates, [e.id for e in result.dropped],
            result.forgotten, result.same_content, result.quarantined,
        )  # fmt: skip
    if kind == "verdict":
        verdict = Verdict(_entry(op[1], "fixed", 0).id, op[2], op[3], 1.8e9 + op[1])
        return [(j.state, j.agent_outcome) for j in store.apply_verdicts(OWNER, PROJECT, [verdict])]
    return store.forget(OWNER, _entry(op[1], "fixed", 0).id)


ids = st.integers(0, 24)
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.lists(st.tuples(ids, st.sampled_from(OUTCOMES), st.integers(0, 30)), max_size=4),
        ),
        st.tuples(st.just("verdict"), ids, st.sampled_from(["ci", "review"]), st.sampled_from(OUTCOMES)),
        st.tuples(st.just("forget"), ids),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.integers(1, 5), st.integers(1, 6))
def test_a_store_with_slack_answers_what_one_without_does(
    ops: list[tuple[Any, ...]], cap: int, slack: int
) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        plain, slacked = FixStore(a, cap=cap), FixStore(b, cap=cap, slack=slack)
        for op in ops:
            assert _apply(slacked, op) == _apply(plain, op), op
            assert _answers(slacked) == _answers(plain)
            assert _lines(plain) <= cap and _lines(slacked) <= cap + slack


def test_lines_stay_past_the_cap_until_cap_plus_slack(tmp_path: Path) -> None:
    store = FixStore(tmp_path, cap=4, slack=3)
    store.append(OWNER, PROJECT, [_entry(n, "fixed", n) for n in range(4)])
    results = [store.append(OWNER, PROJECT, [_entry(n, "fixed", n)]) for n in range(4, 8)]
    assert [[e.id for e in r.dropped] for r in results] == [[_entry(n, "fixed", 0).id] for n in range(4)]
    assert [_lines(FixStore(tmp_path, cap=4))] == [4]  # the 8th line made 8 > 4 + 3: one rewrite
    store.append(OWNER, PROJECT, [_entry(8, "fixed", 8)])
    assert _lines(store) == 5 and len(store.read(OWNER, PROJECT).entries) == 4
    # a replayed turn whose line is past the cap: dropped again, never a second line with its id
    replay = store.append(OWNER, PROJECT, [_entry(4, "fixed", 4)])
    assert [e.id for e in replay.added] == [e.id for e in replay.dropped] == [_entry(4, "fixed", 0).id]
    assert FixStore(tmp_path, cap=4).read(OWNER, PROJECT).malformed == [] and _lines(store) == 4  # rewritten
    store.append(OWNER, PROJECT, [_entry(9, "fixed", 9)])  # entry 5's line is now past the cap
    assert _lines(store) == 5
    # a verdict or forget on an entry past the cap finds nothing; a rewrite drops the lines past it
    judged = store.apply_verdicts(OWNER, PROJECT, [Verdict(_entry(5, "fixed", 0).id, "ci", "partial", 2e9)])
    assert judged[0].state == "missing" and _lines(store) == 5  # nothing changed: no rewrite
    assert store.forget(OWNER, _entry(5, "fixed", 0).id) is False
    assert store.forget(OWNER, _entry(9, "fixed", 0).id) is True and _lines(store) == 3
    assert [e.id for e in store.read(OWNER, PROJECT).entries] == [_entry(n, "fixed", 0).id for n in (6, 7, 8)]


def test_negative_slack_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="slack"):
        FixStore(tmp_path, cap=5, slack=-1)
