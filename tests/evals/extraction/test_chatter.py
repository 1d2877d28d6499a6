"""The hand-labelled chatter file and the filter's figures on it."""

from __future__ import annotations

from evals.extraction.chatter import load, report, score


def test_the_labelled_file_has_both_halves_and_both_labels() -> None:
    rows = load()
    assert len(rows) >= 200
    assert {r["half"] for r in rows} == {"tune", "report"}
    assert {r["label"] for r in rows} == {"chatter", "explains"}
    assert all(r["text"].strip() and r["source"] for r in rows)


def test_score_counts_by_hand_made_rows() -> None:
    rows = [
        {"id": 1, "text": "THOUGHT: I'm ready to submit.", "label": "chatter"},
        {"id": 2, "text": "The regex ignored a leading minus sign, which was the bug.", "label": "explains"},
        {"id": 3, "text": "The regex ignored a leading minus sign, which was the bug.", "label": "chatter"},
    ]
    got = score(rows)
    assert (got["sentences"], got["chatter"], got["precision"], got["recall"]) == (3, 2, 1.0, 0.5)
    assert got["mistakes"] == ["FN 3: The regex ignored a leading minus sign, which was the bug."]


def test_the_filter_drops_few_explanations_on_the_report_half() -> None:
    # A floor under the measured figure (precision 0.944 on the report half): dropping explanations is
    # the costly mistake; a change that lowers it should be seen.
    assert report()["report"]["precision"] >= 0.9
