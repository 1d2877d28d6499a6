"""evals.related.from_use: the session record is a valid ``harness_meta.recall``, the replay feeds the
store's learning, and the per-fix bound counts what it drops."""

from __future__ import annotations

from pathlib import Path

from evals.related.core import load_repos
from evals.related.from_use import _dropping, by_prior_use, per_fix_bound, replay, session_record
from ingest.recall_meta import RecallMeta

A, B = "fix-00000000000000aa", "fix-00000000000000bb"


def test_the_session_record_is_a_recall_meta() -> None:
    meta = RecallMeta.model_validate(session_record([A, B], [A]))
    assert (meta.arm, [s.id for s in meta.injected], meta.followed) == ("memory", [A, B], [A])


def test_the_replay_learns_only_when_on(tmp_path: Path) -> None:
    repo = next(r for r in load_repos() if r.name == "golang/tools")
    on = replay(repo, tmp_path / "on", learn=True, limit=90)
    off = replay(repo, tmp_path / "off", learn=False, limit=90)
    assert any(use for r in on for use in r["reasons"])  # the store said how fixes were used
    assert not any(use for r in off for use in r["reasons"])
    assert [r["sha"] for r in on] == [r["sha"] for r in off]


def test_dropping_leaves_out_fixes_shown_and_not_followed() -> None:
    records = [  # one repository, four tasks: the later half is the last two
        {"returned": ["x"], "same_file": []},
        {"returned": ["x", "y"], "same_file": ["y"]},
        {"returned": ["x", "y"], "same_file": ["y"]},  # x shown twice before, never followed: dropped
        {"returned": ["y"], "same_file": []},  # y shown twice, followed twice: kept
    ]
    assert _dropping([records], 10**9, 0.0) == (1 / 3, 1)
    assert _dropping([records], 1, 0.01) == (1 / 2, 1)
    assert per_fix_bound([records])["precision_gain"] == 0.5


def test_unrelated_answers_are_told_apart_by_what_was_done_with_the_fix_before() -> None:
    records = [
        {"returned": ["x", "y"], "same_file": ["y"]},
        {"returned": ["z"], "same_file": []},
        {"returned": ["x", "y", "w"], "same_file": []},  # later half: x never followed, y followed, w new
        {"returned": ["y"], "same_file": ["y"]},
    ]
    assert by_prior_use([records]) == {
        "unrelated": {"new": 1, "never_followed": 1, "followed_before": 1},
        "related": {"new": 0, "never_followed": 0, "followed_before": 1},
    }
