"""``python -m evals.related.by_query_replay``: the query-dependent learner prototype of this commit, in
``from_use``'s real replay (feedback included: a sunk fix is not shown again, so it gains no ignorers).

The prototype (``store.usage.Learned.for_query``): per fix, the first turns of the last ``tasks_kept``
sessions that followed it and of those shown it that did not; at recall, a fix whose ignorers' best
strength for the query beats its followers' by more than ``query_margin`` of the query's best strength is
multiplied by ``query_low``; with ``query_rise_needs_match`` a fix's rise (multiplier above 1) holds only
when the query is closer to its followers than to its ignorers. Each setting is one ``from_use`` replay;
the first half of the tasks is the tuning part, the later half is reported. ``tasks_kept`` is 8 unless a
setting says otherwise (``{"tasks_kept": 0}``: decision 0060's per-fix rule alone); the prototype's
default is 0, so a store built without these parameters behaves as before.

    python -m evals.related.by_query_replay --write   # results/by_query_replay.json
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from evals.related import from_use
from evals.related.core import load_repos
from store import FixStore
from store.usage import LearnParams

RESULTS = Path(__file__).parent / "results" / "by_query_replay.json"
SETTINGS: tuple[dict[str, Any], ...] = (
    {"tasks_kept": 0},  # the per-fix rule alone (decision 0060)
    {"query_margin": 0.5},
    {"query_margin": 0.3},
    {"query_margin": 0.2},
    {"query_margin": 0.1},
    {"query_margin": 0.3, "query_low": 0.25},
    {"tasks_kept": 8, "query_margin": 100.0, "query_rise_needs_match": True},
    {"query_margin": 0.5, "query_rise_needs_match": True},
    {"query_margin": 0.2, "query_low": 0.75, "query_rise_needs_match": True},
    {"query_margin": 0.1, "query_low": 0.75, "query_rise_needs_match": True},
    {"query_margin": 0.3, "query_low": 0.75, "query_rise_needs_match": True},
)


def _change(half: dict[str, Any], key: str) -> float:
    on, off = float(half["on"][key]), float(half["off"][key])
    return round((on - off) / off, 4)


def measure(setting: dict[str, Any]) -> dict[str, Any]:
    """``from_use.evaluate`` with the store's learning parameters set to ``setting``."""
    store = functools.partial(FixStore, learn_params=LearnParams(**{"tasks_kept": 8, **setting}))
    with mock.patch.object(from_use, "FixStore", store):
        result = from_use.evaluate(load_repos())
    out: dict[str, Any] = {"setting": setting}
    for half in ("first_half", "later_half"):
        cells = result[half]
        out[half] = {
            "precision_off": cells["off"]["precision"],
            "precision_on": cells["on"]["precision"],
            **{f"{k}_change": _change(cells, k) for k in ("precision", "hit_file", "hit_fn")},
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.related.by_query_replay", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name} under results/")
    args = parser.parse_args(argv)
    rows = []
    for setting in SETTINGS:
        row = measure(setting)
        rows.append(row)
        f, later = row["first_half"], row["later_half"]
        print(
            f"{json.dumps(setting)}: first P {f['precision_change']:+.1%} file {f['hit_file_change']:+.1%}"
            f" fn {f['hit_fn_change']:+.1%} | later P {later['precision_change']:+.1%} file "
            f"{later['hit_file_change']:+.1%} fn {later['hit_fn_change']:+.1%}",
            flush=True,
        )
    if args.write:
        RESULTS.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
