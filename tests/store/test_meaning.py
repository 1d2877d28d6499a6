"""The meaning signal (``store.meaning``, the optional ``meaning`` extra): ranking's rescue of the fixes
just under the floor (pure), the adapter's cache, the store's text-only recall with it, and the real model
loaded offline when the extra is installed (skipped otherwise: CI installs ``.[test]`` only)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from store import FixStore
from store.meaning import Meaning, load_meaning
from store.recall.ranking import DEFAULT_WEIGHTS, OUTCOME_CODES, RankingWeights, Signals, rank
from tests.store.factories import OWNER, PROJECT, make_entry

# strength = the jaccard column: relevance is jaccard alone, min_score 1, no evidence
PLAIN = replace(DEFAULT_WEIGHTS, coverage=0.0, files=0.0, errors=0.0, vector=0.0, min_score=1.0,
                evidence_floor=0.0, jaccard=1.0)  # fmt: skip


def _rank(strengths: list[float], cosines: list[float] | None, weights: RankingWeights = PLAIN) -> list[int]:
    n = len(strengths)
    zero = np.zeros(n)
    ranked = rank(
        Signals(np.array(strengths), zero, zero, zero, zero),
        live=np.ones(n, dtype=bool),
        outcome_codes=np.full(n, OUTCOME_CODES["fixed"], dtype=np.int64),
        regressed=np.zeros(n, dtype=bool),
        ts=np.arange(n, dtype=np.float64),
        k=5,
        now=1e6,
        weights=weights,
        meaning=None if cosines is None else np.array(cosines),
    )
    return [row for row, _ in ranked]


@pytest.mark.parametrize(
    ("strengths", "cosines", "expected"),
    [
        ([0.75, 0.5], None, []),  # no meaning signal: nothing passes the floor, nothing comes back
        ([0.75, 0.5], [0.7, 0.9], [0]),  # just under the floor and means the same: rescued
        ([0.75, 0.5], [0.5, 0.9], []),  # under the cosine threshold: quiet
        ([0.65, 0.6], [0.9, 0.9], []),  # too weak on words whatever it means
        ([0.9, 0.8, 0.75], [0.7, 0.7, 0.7], [0, 1]),  # at most meaning_count, strongest first
        ([1.0, 0.8], [0.0, 0.0], [0, 1]),  # something passed the floor: the shipped answer (runner-up) ...
        ([1.0, 0.8], [0.9, 0.9], [0, 1]),  # ... whatever the cosines say
        ([1.2, 0.6], [0.9, 0.9], [0]),
    ],
)
def test_rank_rescues_only_when_nothing_passes_the_floor(
    strengths: list[float], cosines: list[float] | None, expected: list[int]
) -> None:
    assert _rank(strengths, cosines) == expected


def test_rescue_looks_only_at_the_strongest_candidates() -> None:
    strengths = [0.9, 0.9, 0.75]
    cosines = [0.1, 0.1, 0.9]
    assert _rank(strengths, cosines) == [2]
    assert _rank(strengths, cosines, replace(PLAIN, meaning_candidates=2.0)) == []


class FakeModel:
    """Embeds a text as unit counts of a few marker words; counts what it embedded."""

    WORDS = ("heredoc", "lexer", "changelog", "release")

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def __call__(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.embedded.extend(texts)
        rows = np.array([[t.lower().count(w) for w in self.WORDS] for t in texts], dtype=np.float32) + 1e-3
        out: npt.NDArray[np.float32] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return out


def test_meaning_caches_entry_vectors_by_id() -> None:
    model = FakeModel()
    meaning = Meaning(model)
    entries = [make_entry(1, "heredoc lexer fix", ts=1.0), make_entry(2, "release the changelog", ts=2.0)]
    first = meaning.cosines(entries, "the heredoc lexer")
    second = meaning.cosines(entries, "the heredoc lexer")
    assert first.tolist() == pytest.approx(second.tolist())
    assert first[0] > 0.9 > 0.1 > first[1]
    assert model.embedded.count("heredoc lexer fix") == 1  # an entry is embedded once
    assert meaning.cosines([], "anything").size == 0


def _store(tmp_path: Path, meaning: Meaning | None) -> FixStore:
    store = FixStore(tmp_path, cap=500, meaning=meaning)
    entries = [
        make_entry(1, "empty heredoc crashes the shell lexer", files=["src/lexer.py"], ts=1_700_000_000),
        *(
            make_entry(
                n, f"update the release notes for version {n}", files=[f"docs/v{n}.md"], ts=1_700_000_000 + n
            )
            for n in range(2, 12)
        ),
    ]
    store.append(OWNER, PROJECT, entries)
    return store


def test_store_recall_with_meaning_rescues_a_near_miss_text_only(tmp_path: Path) -> None:
    query = "heredoc lexer"
    plain = _store(tmp_path / "plain", None)
    weak = replace(DEFAULT_WEIGHTS, floor=1e9)  # nothing passes: only the meaning signal can answer
    near = replace(weak, meaning_strength=0.0)
    assert plain.recall(OWNER, PROJECT, query, now=1.8e9, weights=near) == []
    with_meaning = _store(tmp_path / "meaning", Meaning(FakeModel()))
    got = with_meaning.recall(OWNER, PROJECT, query, now=1.8e9, weights=near)
    assert [r.entry.task for r in got] == ["empty heredoc crashes the shell lexer"]
    assert got[0].reasons.meaning is not None and "means what the task says" in got[0].reasons.summary()
    # mid-task (files named) and with an error, recall is text and files only, as without the extra
    assert with_meaning.recall(OWNER, PROJECT, query, files=["src/lexer.py"], now=1.8e9, weights=weak) == []
    assert with_meaning.recall(OWNER, PROJECT, query, errors=["E: x"], now=1.8e9, weights=near) == []


def test_store_recall_is_unchanged_without_a_near_miss(tmp_path: Path) -> None:
    query = "the shell lexer crashes on an empty heredoc"
    plain = _store(tmp_path / "plain", None)
    with_meaning = _store(tmp_path / "meaning", Meaning(FakeModel()))
    want = [(r.entry.id, r.score) for r in plain.recall(OWNER, PROJECT, query, now=1.8e9)]
    assert want
    got = with_meaning.recall(OWNER, PROJECT, query, now=1.8e9)
    assert [(r.entry.id, r.score) for r in got] == want
    assert all(r.reasons.meaning is None for r in got)  # over the floor: the words say why, not meaning


def test_the_real_model_loads_offline_and_tells_related_from_unrelated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wordllama = pytest.importorskip(
        "wordllama", reason="the optional `meaning` extra is not installed", exc_type=ImportError
    )

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("wordllama tried to download")

    monkeypatch.setattr(wordllama.wordllama.requests, "get", no_network)
    meaning = load_meaning()
    assert meaning is not None
    entries = [
        make_entry(1, "Fix crash when an overloaded function has a decorator", ts=1.0),
        make_entry(2, "Update the documentation build to the new theme", ts=2.0),
    ]
    related, unrelated = meaning.cosines(entries, "mypy crashes on a decorated overload").tolist()
    assert related >= DEFAULT_WEIGHTS.meaning_cosine > unrelated
