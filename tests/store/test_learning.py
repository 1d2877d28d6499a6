"""The store learns from use: the usage file beside the log stays in step with it (append, forget,
rotation, a torn file), recall multiplies by it and says why, the switch turns it off, holdback shadows
count for nothing. Real files in ``tmp_path``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from store import FixStore
from store.entry import FixEntry
from store.paths import project_files
from store.persist.usage_file import decode
from store.recall.ranking import RankingWeights, Signals, rank
from store.usage import FixUse, Usage, multiplier, usage_of
from tests.store.factories import OWNER, PROJECT, make_entry

QUERY = "the tokenizer crashes on an empty heredoc in the shell lexer"


def _fix() -> FixEntry:
    return make_entry(
        1, "tokenizer crashes on empty heredoc in shell lexer", files=["src/lexer.py"], ts=1_700_000_000
    )


def _session(n: int, shown: list[str], followed: list[str], arm: str = "memory", **extra: Any) -> FixEntry:
    """A later turn of another task (nothing like ``QUERY``) whose session was shown ``shown``."""
    key = "injected" if arm == "memory" else "shadow"
    record = {"arm": arm, key: [{"id": i, "surface": "claude-code", "tier": "close"} for i in shown],
              "followed": followed}  # fmt: skip
    task = f"update the release notes for version {n} of the changelog"
    return make_entry(n, task, files=[f"docs/v{n}.md"], session_id=f"s{n}", recall=record, **extra)


def _on_disk(store: FixStore) -> Usage | None:
    found = decode(project_files(store.root, OWNER, PROJECT).usage.read_bytes())
    return None if found is None else found[1]


def _score(store: FixStore, entry_id: str) -> tuple[float, str | None]:
    (hit,) = [r for r in store.recall(OWNER, PROJECT, QUERY, now=1_800_000_000) if r.entry.id == entry_id]
    return hit.score, hit.reasons.use


def _both(root: Path, fix: FixEntry) -> tuple[tuple[float, str | None], tuple[float, str | None]]:
    """(learning on, learning off): the fix's score and use, over the same log."""
    return (
        _score(FixStore(root, cap=500, learn_from_use=True), fix.id),
        _score(FixStore(root, cap=500, learn_from_use=False), fix.id),
    )


def test_a_fix_shown_and_never_followed_sinks_and_says_so(tmp_path: Path) -> None:
    fix = _fix()
    store = FixStore(tmp_path, cap=500, learn_from_use=True)
    store.append(OWNER, PROJECT, [fix, *(_session(10 + i, [fix.id], []) for i in range(8))])
    (score, why), (plain, none) = _both(tmp_path, fix)
    assert score == pytest.approx(plain * multiplier(FixUse(shown=8)), abs=1e-8) and score < plain
    assert (why, none) == ("shown 8 times, never followed", None)  # off: no use said either
    (hit,) = [r for r in store.recall(OWNER, PROJECT, QUERY, now=1_800_000_000) if r.entry.id == fix.id]
    assert hit.reasons.summary().endswith("; shown 8 times, never followed")
    assert hit.reasons.to_dict()["use"] == why


def test_a_fix_followed_in_fixed_sessions_rises(tmp_path: Path) -> None:
    fix = _fix()
    store = FixStore(tmp_path, cap=500, learn_from_use=True)
    store.append(OWNER, PROJECT, [fix])
    store.recall(OWNER, PROJECT, QUERY)  # warm: the store's memo must follow the log
    store.append(OWNER, PROJECT, [_session(10 + i, [fix.id], [fix.id]) for i in range(3)])
    score, why = _score(store, fix.id)
    _, (plain, _) = _both(tmp_path, fix)
    assert score == pytest.approx(plain * multiplier(FixUse(3, 3, 0, 3)), abs=1e-8) and score > plain
    assert why == "followed 3 of 3 times, sessions fixed"


def test_holdback_shadows_are_no_showings(tmp_path: Path) -> None:
    fix = _fix()
    store = FixStore(tmp_path, cap=500, learn_from_use=True)
    store.append(OWNER, PROJECT, [fix, *(_session(10 + i, [fix.id], [], arm="holdback") for i in range(8))])
    (score, why), (plain, _) = _both(tmp_path, fix)
    assert (score, why) == (plain, None)
    assert store.usage(OWNER, PROJECT) == {} and _on_disk(store) == {}


def test_the_usage_file_stays_in_step_with_the_log(tmp_path: Path) -> None:
    fix, other = _fix(), make_entry(2, "another fix", files=["src/other.py"])
    store = FixStore(tmp_path, cap=6)
    store.append(OWNER, PROJECT, [fix, other])
    assert _on_disk(store) == {}
    sessions = [_session(10, [fix.id], [fix.id]), _session(11, [fix.id, other.id], [])]
    store.append(OWNER, PROJECT, sessions)
    assert (
        _on_disk(store)
        == usage_of(store.read(OWNER, PROJECT).entries)
        == {
            fix.id: FixUse(2, 1, 0, 1),
            other.id: FixUse(1),
        }
    )
    assert store.forget(OWNER, sessions[0].id)  # its session's record goes with it
    assert _on_disk(store) == {fix.id: FixUse(1), other.id: FixUse(1)}
    store.append(OWNER, PROJECT, [make_entry(3, "a plain turn")])  # no record: the usage is reused
    assert _on_disk(store) == {fix.id: FixUse(1), other.id: FixUse(1)}
    store.append(OWNER, PROJECT, [_session(20 + i, [other.id], [other.id]) for i in range(4)])  # rotates
    kept = store.read(OWNER, PROJECT).entries
    assert len(kept) == 6
    assert _on_disk(store) == usage_of(kept) == store.usage(OWNER, PROJECT)
    assert FixStore(tmp_path, cap=6).usage(OWNER, PROJECT) == usage_of(kept)  # a fresh store reads it


def test_a_torn_or_stale_usage_file_is_counted_again(tmp_path: Path) -> None:
    fix = _fix()
    store = FixStore(tmp_path, cap=500)
    store.append(OWNER, PROJECT, [fix, _session(10, [fix.id], [])])
    path = project_files(store.root, OWNER, PROJECT).usage
    good = path.read_bytes()
    path.write_bytes(good[:-9])  # torn
    assert FixStore(tmp_path, cap=500).usage(OWNER, PROJECT) == {fix.id: FixUse(1)}
    assert path.read_bytes() == good  # the reader wrote it again
    log = project_files(store.root, OWNER, PROJECT).log
    with log.open("ab") as out:  # a line written behind the store's back: the file is stale
        out.write(
            log.read_bytes()
            .splitlines(keepends=True)[-1]
            .replace(b"s10", b"s99")
            .replace(
                b'"id":"' + _session(10, [], []).id.encode(), b'"id":"' + _session(99, [], []).id.encode()
            )
        )
    assert FixStore(tmp_path, cap=500).usage(OWNER, PROJECT) == {fix.id: FixUse(2)}


def test_rank_applies_the_factors_before_the_floor() -> None:
    weights = RankingWeights(evidence_floor=0.0, runner_up_floor=0.0)
    ones = np.full(2, 1.2 * weights.min_score / weights.jaccard)  # strength 1.2 for both
    zeros = np.zeros(2)
    signals = Signals(jaccard=ones, coverage=zeros, files=zeros, errors=zeros, cosine=zeros)
    common: dict[str, Any] = {
        "live": np.ones(2, dtype=bool),
        "outcome_codes": np.zeros(2, dtype=np.int64),
        "regressed": np.zeros(2, dtype=bool),
        "ts": np.array([1.0, 2.0]),
        "k": 5,
        "now": 3.0,
        "weights": weights,
    }
    assert [row for row, _ in rank(signals, **common)] == [1, 0]
    assert [row for row, _ in rank(signals, factors=np.array([1.0, 0.8]), **common)] == [0]  # 0.96 < 1
    assert [row for row, _ in rank(signals, factors=np.array([1.5, 1.0]), **common)] == [0, 1]
