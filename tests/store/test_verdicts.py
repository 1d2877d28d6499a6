"""store.verdicts (pure): precedence, idempotence, order independence; FixStore.apply_verdicts on files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import FixStore
from store.entry import content_key
from store.verdicts import (
    HISTORY,
    PRECEDENCE,
    SOURCES,
    Verdict,
    agent_outcome,
    history,
    in_effect,
    judge,
    source_of,
    state_of,
)
from tests.store.factories import OWNER, PROJECT, make_entry

ENTRY = make_entry(1, outcome="partial")


def _v(source: str, outcome: str = "fixed", ts: float = 10.0, detail: str = "") -> Verdict:
    return Verdict(ENTRY.id, source, outcome, ts, detail)  # type: ignore[arg-type]


def _apply(*verdicts: Verdict) -> object:
    entry = ENTRY
    for v in verdicts:
        entry = judge(entry, v) or entry
    return entry


@pytest.mark.parametrize(
    ("first", "second", "wins"),
    [
        (_v("ci"), _v("review", "partial"), "review"),  # higher after lower
        (_v("review", "partial"), _v("ci"), "review"),  # lower after higher: nothing
        (_v("merged"), _v("benchmark", "partial"), "benchmark"),
        (_v("revert", "partial", ts=1.0), _v("review", ts=99.0), "revert"),  # precedence before time
        (_v("ci", ts=5.0), _v("ci", "partial", ts=6.0), "ci"),  # same source: the later
    ],
)
def test_precedence_table(first: Verdict, second: Verdict, wins: str) -> None:
    judged = _apply(first, second)
    assert source_of(judged) == f"verdict:{wins}"  # type: ignore[arg-type]
    assert agent_outcome(judged) == "partial"  # type: ignore[arg-type]


def test_precedence_order_is_the_documented_one() -> None:
    assert PRECEDENCE == ("revert", "review", "ci", "benchmark", "merged", "agent-tests")


def test_the_same_verdict_twice_changes_nothing_and_the_agents_label_stays() -> None:
    once = judge(ENTRY, _v("ci", detail="x" * 900))
    assert once is not None and len(once.verdict["detail"]) == 500  # type: ignore[index]
    assert judge(once, _v("ci", detail="x" * 900)) is None
    assert state_of(once, _v("ci", detail="x" * 900)) == "applied"
    assert state_of(once, _v("merged")) == "superseded"
    assert content_key(once) == content_key(ENTRY)  # a verdict does not make another turn of it


_verdicts = st.lists(
    st.builds(
        lambda s, o, t, d: Verdict(ENTRY.id, s, o, float(t), d),
        st.sampled_from(SOURCES),
        st.sampled_from(("fixed", "partial", "unverified")),
        st.integers(0, 5),
        st.sampled_from(("", "a", "b")),
    ),
    min_size=1,
    max_size=6,
)


@given(_verdicts, st.randoms())
def test_the_result_does_not_depend_on_arrival_order_or_repeats(verdicts: list[Verdict], rnd: object) -> None:
    shuffled = [*verdicts, *verdicts]
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a, b = _apply(*verdicts), _apply(*shuffled)
    assert a == b
    best = max(verdicts, key=Verdict.rank)
    assert a.outcome == best.outcome and a.verdict == best.to_json()  # type: ignore[attr-defined]


_many = st.lists(
    st.builds(
        lambda s, o, t, d: Verdict(ENTRY.id, s, o, float(t), d, "commit"),
        st.sampled_from(SOURCES),
        st.sampled_from(("fixed", "partial")),
        st.integers(0, 30),
        st.sampled_from(("", "a", "b")),
    ),
    min_size=1,
    max_size=25,
)


@given(_many, st.randoms())
def test_the_history_keeps_every_verdict_up_to_its_bound_whatever_the_order(
    verdicts: list[Verdict], rnd: object
) -> None:
    shuffled = [*verdicts, *verdicts]
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a, b = _apply(*verdicts), _apply(*shuffled)
    assert history(a) == history(b)  # type: ignore[arg-type]
    kept = history(a)  # type: ignore[arg-type]
    distinct = set(verdicts)
    assert len(kept) == min(HISTORY, len(distinct)) and set(kept) <= distinct
    assert in_effect(a) in kept  # type: ignore[arg-type]  # the verdict in effect is always there
    assert [v.ts for v in kept] == sorted(v.ts for v in kept)  # oldest first
    assert {v.via for v in kept} == {"commit"}


def test_a_superseded_verdict_is_kept_in_the_history_with_its_link_reason() -> None:
    revert = Verdict(ENTRY.id, "revert", "partial", 20.0, "reverted by 1a2b3c", "content")
    ci = Verdict(ENTRY.id, "ci", "fixed", 30.0, "CI run 7", "commit")
    judged = _apply(revert, ci)
    assert source_of(judged) == "verdict:revert"  # type: ignore[arg-type]
    assert (judged.model_extra or {})["verdicts"] == [  # type: ignore[attr-defined]
        {
            "source": "revert",
            "outcome": "partial",
            "ts": 20.0,
            "detail": "reverted by 1a2b3c",
            "via": "content",
        },
        {"source": "ci", "outcome": "fixed", "ts": 30.0, "detail": "CI run 7", "via": "commit"},
    ]
    assert judge(judged, ci) is None  # received before: nothing changes  # type: ignore[arg-type]


def test_a_line_from_before_the_history_starts_it_with_the_verdict_in_effect() -> None:
    old = ENTRY.model_copy(
        update={"outcome": "fixed", "agent_outcome": "partial", "outcome_source": "verdict:ci",
                "verdict": {"source": "ci", "outcome": "fixed", "ts": 5.0, "detail": ""}}
    )  # fmt: skip
    assert [v.source for v in history(old)] == ["ci"]
    judged = judge(old, Verdict(ENTRY.id, "merged", "fixed", 9.0, "", "content"))
    assert judged is not None and source_of(judged) == "verdict:ci"
    assert [(v.source, v.via) for v in history(judged)] == [("ci", ""), ("merged", "content")]


def test_apply_verdicts_on_a_real_log(tmp_path: Path) -> None:
    store = FixStore(tmp_path, cap=10)
    other = make_entry(2)
    store.append(OWNER, PROJECT, [ENTRY, other])
    log = next(tmp_path.rglob("*.jsonl"))
    untouched = log.read_bytes().splitlines()[1]
    [judged] = store.apply_verdicts(OWNER, PROJECT, [_v("ci", detail="token=ghp_" + "a" * 36)])
    assert (judged.state, judged.agent_outcome) == ("applied", "partial")
    entry = store.read(OWNER, PROJECT).entries[0]
    assert entry.outcome == "fixed" and "ghp_" not in entry.verdict["detail"]  # type: ignore[index]
    assert log.read_bytes().splitlines()[1] == untouched  # other lines kept byte for byte
    assert store.recall(OWNER, PROJECT, "fix something", k=2)  # the view was rebuilt
    missing = Verdict("fix-" + "0" * 16, "ci", "fixed", 1.0)
    assert [j.state for j in store.apply_verdicts(OWNER, PROJECT, [missing])] == ["missing"]
    assert store.forget(OWNER, other.id)
    forgotten = Verdict(other.id, "ci", "fixed", 1.0)
    assert [j.state for j in store.apply_verdicts(OWNER, PROJECT, [forgotten])] == ["forgotten"]
    assert [j.state for j in store.apply_verdicts(OWNER, "no/such/project", [forgotten])] == ["missing"]
