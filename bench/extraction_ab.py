"""Extraction CPU, this tree against another (the old one): median of alternating same-run rounds.

Run: ``python -m bench.extraction_ab (--old DIR | --refs OLD NEW) [--rounds 5] [--events 300]
[--corpus DIR] [--callgrind N] [--name extraction_ab]``. ``--refs`` takes two git refs (``NEW`` may be
``WORKTREE``, the checkout as it is), exported from git by ``bench.refs``; ``--old`` a tree on disk against
this one. Writes ``bench/results/<--name>.json`` and prints it.

Each round runs, in a fresh process per tree with that tree first on ``PYTHONPATH`` and the two trees in
alternating order (old first in even rounds): (1) ``bench.extraction_bench``'s ``run`` with ``--repeats``
inner rounds (its median; CPU microseconds per realistic and per unverified turn; its result file is left
alone); (2) when ``--corpus`` is given, ``extract`` over every turn of the real logs under it (read with
the importers before the clock starts), the best of ``--repeats`` passes, each starting with every
extraction cache cleared (a real turn is extracted once), as CPU microseconds per turn. The figure per
tree is the median over rounds; ``change`` is new / old - 1 (positive: slower). On a shared machine the
timings move with the load; ``python_calls`` (function calls per turn, cold caches, counted once per
tree) is the deterministic companion. ``--callgrind N`` adds instructions per turn (valgrind's callgrind,
which the load does not move): the same turns for both trees (written once by this tree: realistic turns
and the generator's 25 KB mix), ``extract`` over N of each after 20 warm-up turns, minus a run that loads
the turns and warms up only, divided by N; and, from cProfile over the same 25 KB turns, each step's
inclusive share of ``extract``'s time (``profile_share``: where the time goes, for both trees).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import write_result
from bench.refs import exported

ROOT = Path(__file__).resolve().parent.parent

_CORPUS_PROBE = """
import json, sys, time
from pathlib import Path
from ingest.importers import import_file, iter_files
from workers.extraction import extract
events = []
for path in iter_files([Path(sys.argv[1])]):
    events.extend(import_file(path, owner="bench").events)
import workers.extraction as package, pkgutil, importlib
names = [m.name for m in pkgutil.iter_modules(package.__path__)]
modules = [importlib.import_module(f"workers.extraction.{name}") for name in names]
best = float("inf")
for _ in range(int(sys.argv[2])):
    for module in modules:  # every pass starts cold: a real turn is extracted once
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
    start = time.process_time()
    for event in events:
        extract(event)
    best = min(best, time.process_time() - start)
print(json.dumps({"turns": len(events), "us_per_turn": round(best / max(len(events), 1) * 1e6, 1)}))
"""


# Deterministic companion to the timings: Python function calls made by extract (cold caches), which the
# machine's load does not move. Realistic turns from the extraction bench, and the corpus when given.
_CALLS_PROBE = """
import cProfile, json, sys, pstats
from pathlib import Path
from bench.extraction_bench import realistic_turn
from ingest.importers import import_file, iter_files
from ingest.schema import TurnEvent
from workers.extraction import extract
def calls(events):
    profile = cProfile.Profile()
    profile.enable()
    for event in events:
        extract(event)
    profile.disable()
    return pstats.Stats(profile).total_calls / max(len(events), 1)
out = {"realistic_calls_per_turn": calls([TurnEvent.model_validate(realistic_turn(i)) for i in range(200)])}
if len(sys.argv) > 1:
    corpus = []
    for path in iter_files([Path(sys.argv[1])]):
        corpus.extend(import_file(path, owner="bench").events)
    out["corpus_calls_per_turn"] = calls(corpus)
print(json.dumps({k: round(v, 1) for k, v in out.items()}))
"""


# Instructions of ``extract`` under callgrind: every run loads all the turns and extracts the 20 warm-up
# turns of each set (regexes compiled, caches warm); ``count`` more of the named set are then extracted.
_WARM = 20
_INSTRUCTIONS_PROBE = """
import sys
from ingest.schema import TurnEvent
from workers.extraction import extract
name, count, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sets = {key: [TurnEvent.model_validate_json(line) for line in open(path).read().splitlines()]
        for key, path in (arg.split("=", 1) for arg in sys.argv[4:])}
for events in sets.values():
    for event in events[:warm]:
        extract(event)
for event in sets.get(name, [])[warm : warm + count]:
    extract(event)
"""


# Inclusive share of extract's time per step: (function name, file it is defined in).
_STEPS = {
    "classify": "extraction/calls.py",
    "collect_files": "extraction/files.py",
    "shell_effects": "extraction/shell_writes.py",
    "summarize_changes": "extraction/changes.py",
    "describe": "extraction/changes.py",
    "collect_errors": "extraction/turn.py",
    "find_errors": "extraction/errors.py",
    "decide_run": "extraction/outcome.py",
    "solution_text": "extraction/solution.py",
    "symbols_from_edit": "extraction/symbols.py",
    "might_hold_secret": "store/redact.py",
}
_SHARES_PROBE = """
import cProfile, json, pstats, sys
from ingest.schema import TurnEvent
from workers.extraction import extract
events = [TurnEvent.model_validate_json(line) for line in open(sys.argv[1]).read().splitlines()]
steps = json.loads(sys.argv[2])
for event in events:
    extract(event)
profile = cProfile.Profile()
profile.enable()
for event in events:
    extract(event)
profile.disable()
stats = pstats.Stats(profile).stats
def inclusive(name, where):
    return sum(v[3] for k, v in stats.items() if k[2] == name and k[0].endswith(where))
total = inclusive("extract", "extraction/turn.py")  # 0 for a compiled core: cProfile sees no frames in it
shares = {name: round(inclusive(name, where) / total, 3) for name, where in steps.items()} if total else {}
print(json.dumps(shares))
"""


def _turn_sets(count: int, directory: Path) -> list[str]:
    """``name=path`` of each set of turns, written as JSON lines (the same bytes for both trees)."""
    from bench.events import make_events  # noqa: PLC0415 - only with --callgrind
    from bench.extraction_bench import realistic_turn  # noqa: PLC0415
    from ingest.schema import TurnEvent, parse_event  # noqa: PLC0415

    sets = {
        "realistic": [TurnEvent.model_validate(realistic_turn(i)) for i in range(_WARM + count)],
        "mix_25kb": [parse_event(raw) for raw in make_events(_WARM + count)],
    }
    paths = []
    for name, events in sets.items():
        path = directory / f"{name}.jsonl"
        path.write_text("".join(event.model_dump_json() + "\n" for event in events))
        paths.append(f"{name}={path}")
    return paths


def _collected(tree: Path, args: list[str]) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(re.findall(r"Collected : (\d+)", done.stderr)[-1])


def _instructions(tree: Path, count: int, sets: list[str]) -> dict[str, int]:
    """Instructions per turn of ``extract`` in ``tree``, per set of turns (callgrind, see the docstring)."""
    base = _collected(tree, [_INSTRUCTIONS_PROBE, "", "0", str(_WARM), *sets])
    names = [item.split("=", 1)[0] for item in sets]
    return {
        f"{name}_instructions_per_turn": round(
            (_collected(tree, [_INSTRUCTIONS_PROBE, name, str(count), str(_WARM), *sets]) - base) / count
        )
        for name in names
    }


def _run(tree: Path, args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    start = done.stdout.index("{")
    return dict(json.loads(done.stdout[start:]))


def _round(tree: Path, events: int, corpus: Path | None, repeats: int) -> dict[str, float]:
    probe = (
        f"import json; from bench.extraction_bench import run; print(json.dumps(run({events}, {repeats})))"
    )
    bench = _run(tree, ["-c", probe])
    figures = {
        "realistic_us_per_turn": float(bench["realistic_turn"]["us_per_event"]),
        "unverified_us_per_turn": float(bench["unverified_turn"]["us_per_event"]),
    }
    if corpus is not None:
        corpus_run = _run(tree, ["-c", _CORPUS_PROBE, str(corpus), str(repeats)])
        figures["corpus_us_per_turn"] = float(corpus_run["us_per_turn"])
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the alternating rounds, print and write the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--old", type=Path, help="the other tree (e.g. a git worktree of main); new: this one")
    which.add_argument(
        "--refs", nargs=2, metavar=("OLD", "NEW"), help="two git refs (NEW may be WORKTREE): their sources"
    )
    parser.add_argument("--name", default="extraction_ab", help="the results file's name (without .json)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="passes inside a round: bench median, corpus best (cold caches)",
    )
    parser.add_argument("--corpus", type=Path, default=None, help="real agent logs to extract, e.g. a folder")
    parser.add_argument(
        "--callgrind", type=int, default=0, help="also count instructions per turn over N turns of each set"
    )
    args = parser.parse_args(argv)
    load_at_start = round(os.getloadavg()[0], 2)  # the machine is shared: > 1 means contention
    if args.refs:  # the refs' sources from git (bench.refs); each runs with its tree first on the path
        trees = {side: exported(ref) for side, ref in zip(("old", "new"), args.refs, strict=True)}
    else:
        trees = {"old": args.old.resolve(), "new": ROOT}
    samples: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for index in range(args.rounds):
        order = ["old", "new"] if index % 2 == 0 else ["new", "old"]
        for name in order:
            samples[name].append(_round(trees[name], args.events, args.corpus, args.repeats))
    calls = {
        name: _run(tree, ["-c", _CALLS_PROBE, *([str(args.corpus)] if args.corpus else [])])
        for name, tree in trees.items()
    }
    keys = list(samples["new"][0])
    medians = {
        name: {k: statistics.median(s[k] for s in runs) for k in keys} for name, runs in samples.items()
    }
    result = {
        "python": sys.version.split()[0],
        "load_average_1m_at_start": load_at_start,
        "rounds": args.rounds,
        "events": args.events,
        "repeats": args.repeats,
        "corpus": str(args.corpus) if args.corpus else None,
        "old_tree": str(trees["old"]),
        "refs": args.refs,
        "median": medians,
        "change": {k: round(medians["new"][k] / medians["old"][k] - 1, 4) for k in keys},
        "python_calls": {
            **calls,
            "change": {k: round(calls["new"][k] / calls["old"][k] - 1, 4) for k in calls["new"]},
        },
        "samples": samples,
    }
    if args.callgrind:
        with tempfile.TemporaryDirectory(prefix="fixmem-extraction-ab-") as tmp:
            sets = _turn_sets(args.callgrind, Path(tmp))
            counted = {name: _instructions(tree, args.callgrind, sets) for name, tree in trees.items()}
            mix = next(item.split("=", 1)[1] for item in sets if item.startswith("mix_25kb="))
            steps = json.dumps(_STEPS)
            shares = {name: _run(tree, ["-c", _SHARES_PROBE, mix, steps]) for name, tree in trees.items()}
        result["callgrind"] = {
            "turns_per_set": args.callgrind,
            "warm_up_turns": _WARM,
            **counted,
            "change": {k: round(counted["new"][k] / counted["old"][k] - 1, 4) for k in counted["new"]},
            "profile_share": {"turns": "mix_25kb", "method": "cProfile, inclusive / extract", **shares},
        }
    print(write_result(args.name, result).read_text(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
