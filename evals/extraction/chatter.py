"""How well ``is_chatter`` finds chatter in agent text, against lines labelled by hand.

The labels (``chatter_labels.jsonl``, one sentence a line: ``id``, ``source`` (log path under
``/work/shared/data/agent-logs`` and turn), ``half``, ``label`` ``chatter`` | ``explains``, ``text``) were
written by hand from the last five round texts of every turn of those logs; the split into a ``tune`` and a
``report`` half is by a hash of the source, not chosen. Chatter is the positive class: precision is the share
of sentences the filter drops that are chatter, recall the share of chatter it drops.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from workers.extraction.solution import is_chatter

LABELS = Path(__file__).with_name("chatter_labels.jsonl")


def load(path: Path = LABELS) -> list[dict[str, Any]]:
    """The labelled sentences."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def score(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Counts, precision and recall of ``is_chatter`` (chatter the positive class) and the mistakes."""
    tp = fp = fn = tn = 0
    mistakes: list[str] = []
    for row in rows:
        said, truth = is_chatter(row["text"]), row["label"] == "chatter"
        tp += said and truth
        fp += said and not truth
        fn += truth and not said
        tn += not said and not truth
        if said != truth:
            mistakes.append(f"{'FP' if said else 'FN'} {row['id']}: {row['text'][:120]}")
    return {
        "sentences": tp + fp + fn + tn,
        "chatter": tp + fn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "explains_kept": round(tn / (tn + fp), 3) if tn + fp else None,
        "mistakes": mistakes,
    }


def report(path: Path = LABELS) -> dict[str, Any]:
    """``score`` per half (``tune``, ``report``) of the labelled file."""
    rows = load(path)
    return {half: score(r for r in rows if r["half"] == half) for half in ("tune", "report")}


if __name__ == "__main__":
    print(orjson.dumps(report(), option=orjson.OPT_INDENT_2).decode())
