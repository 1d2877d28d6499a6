"""A/B: the index file as plain JSON with a sibling seal file against today's sealed file, and what an
older store makes of the new file (issue [one-path], item 3).

Run: ``python -m bench.index_ab [--runs R] [--old REV] [--no-write]``; writes ``bench/results/index_ab.json``.

- ``write``: the index write alone, in this process, on an index of 500 bench entries (``bench.store_bench``;
  each write alternates between the 499- and 500-entry bodies, as appends at the cap do). Three sides,
  their order rotating between rounds so that a change of the machine's load favours none:
  ``sealed`` (the body and its sha256 line in one file, overwritten in place: the write being replaced),
  ``json_seal_file`` (the body as it is, then ``sha256sum``'s line in ``<index>.sha256``, both in place:
  this tree's ``fsio.overwrite_with_seal``) and ``rename`` (temp file + ``os.replace``, no fsync: the way
  dropped because ext4 flushes the new data on a rename over an existing file, ``auto_da_alloc``).
- ``append``: whole one-entry appends at the cap (500, each also rotates), old tree against this one,
  each side in its own process, alternating. The old tree is ``git archive REV`` (default ``main``).
- ``mixed_fleet``: a store of the old tree reads an index this tree wrote, and the other way round.

Reported: medians over rounds of the mean wall and CPU ms per call.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.common import load_average, machine, versions, write_result
from bench.store_bench import make_entries
from store.persist import fsio
from store.recall.index import build_index

ROUNDS = 9
WRITES = 300
APPENDS = 40
ROOT = Path(__file__).resolve().parent.parent

_SIDES: dict[str, Callable[[Path, bytes], None]] = {
    "sealed": fsio.overwrite_sealed,
    "json_seal_file": fsio.overwrite_with_seal,
    "rename": lambda path, body: fsio.replace_atomically(path, body, durable=False),
}

_APPEND_CHILD = """
import json, sys, tempfile, time
from pathlib import Path
from bench.store_bench import OWNER, PROJECT, make_entries, populated
appends, seed = int(sys.argv[1]), int(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    store = populated(Path(tmp), 500)
    entries = make_entries(appends, seed=seed, start=20_000 + seed * appends)
    t0, c0 = time.perf_counter(), time.process_time()
    for entry in entries:
        store.append(OWNER, PROJECT, [entry])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"wall_ms": wall * 1000 / appends, "cpu_ms": cpu * 1000 / appends}))
"""

_FLEET_CHILD = """
import json, sys, time
from pathlib import Path
from bench.store_bench import OWNER, PROJECT, make_entries
from store import FixStore
from store.paths import project_files
from store.persist import fixlog
data, action = Path(sys.argv[1]), sys.argv[2]
store = FixStore(data, cap=500)
index = project_files(data / "fix_memory", OWNER, PROJECT).index
out = {}
if action == "append":
    store.append(OWNER, PROJECT, make_entries(1, seed=3, start=900))
else:
    out["index_usable_to_this_version"] = fixlog.read_index(index) is not None
    t0 = time.perf_counter()
    hits = store.recall(OWNER, PROJECT, "the login handler timeout", now=2e9)
    out["cold_recall_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    out["recall_ids"] = [h.entry.id for h in hits]
try:
    out["json_load_ok"] = isinstance(json.loads(index.read_bytes()), dict)
except ValueError:
    out["json_load_ok"] = False
print(json.dumps(out))
"""


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def bench_write(rounds: int, writes: int) -> dict[str, Any]:
    """Mean wall and CPU ms per index write, per side (see the module docstring)."""
    entries = make_entries(500)
    bodies = [orjson.dumps(build_index(entries[:499])), orjson.dumps(build_index(entries))]
    samples: dict[str, tuple[list[float], list[float]]] = {side: ([], []) for side in _SIDES}
    names = list(_SIDES)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for side in names[r % 3 :] + names[: r % 3]:
                path = Path(tmp) / f"{side}.index.json"
                write = _SIDES[side]
                write(path, bodies[1])  # the file exists: every timed write overwrites one
                t0, c0 = time.perf_counter(), time.process_time()
                for i in range(writes):
                    write(path, bodies[i % 2])
                samples[side][0].append((time.perf_counter() - t0) * 1000 / writes)
                samples[side][1].append((time.process_time() - c0) * 1000 / writes)
    return {
        "index_bytes": len(bodies[1]),
        "writes_per_round": writes,
        "samples_ms": {side: {"wall": s[0], "cpu": s[1]} for side, s in samples.items()},
        "summary": {
            side: {"wall_ms_per_write": _median(s[0]), "cpu_ms_per_write": _median(s[1])}
            for side, s in samples.items()
        },
    }


def _child(tree: Path, code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` with ``tree`` first on the path; its last stdout line, parsed."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    parsed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return parsed


def bench_append(old: Path, rounds: int, appends: int) -> dict[str, Any]:
    """Mean wall and CPU ms per one-entry append at the cap, the old tree against this one."""
    trees = {"old": old, "new": ROOT}
    samples: dict[str, tuple[list[float], list[float]]] = {side: ([], []) for side in trees}
    for r in range(rounds):
        for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
            got = _child(trees[side], _APPEND_CHILD, str(appends), str(r))
            samples[side][0].append(got["wall_ms"])
            samples[side][1].append(got["cpu_ms"])
    return {
        "appends_per_round": appends,
        "samples_ms": {side: {"wall": s[0], "cpu": s[1]} for side, s in samples.items()},
        "summary": {
            side: {"wall_ms_per_append": _median(s[0]), "cpu_ms_per_append": _median(s[1])}
            for side, s in samples.items()
        },
    }


def mixed_fleet(old: Path) -> dict[str, Any]:
    """What each version makes of the index file the other wrote last: a project of 500 entries written by
    this tree, then read and appended to by the old tree and this one in turn (recall answers compared,
    and the first recall's wall ms in a fresh process, which builds the project's view)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "bench.index_ab", "--populate", tmp], cwd=ROOT, check=True)
        steps = (  # (who, what) in order: each step sees the files the steps before it left
            ("old", "read"), ("new", "read"), ("old", "append"), ("old", "read"), ("new", "read"),
            ("old", "read"),
        )  # fmt: skip
        for i, (who, action) in enumerate(steps):
            out[f"{i}_{who}_{action}"] = _child(old if who == "old" else ROOT, _FLEET_CHILD, tmp, action)
    answers = {json.dumps(step["recall_ids"]) for step in out.values() if "recall_ids" in step}
    out["same_recall_answers_throughout"] = len(answers) == 1
    return out


def _populate(directory: str) -> None:
    from bench.store_bench import populated  # noqa: PLC0415 (only the --populate child needs it)

    populated(Path(directory), 500)


def _old_tree(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(into, filter="data")
    return into


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=ROUNDS, help=f"rounds per side (default {ROUNDS})")
    parser.add_argument("--old", default="main", help="the git revision of today's tree (default main)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--populate", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.populate:
        _populate(args.populate)
        return {}
    load, started = load_average(), time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        old = _old_tree(args.old, Path(tmp))
        body = {
            "write": bench_write(args.runs, WRITES),
            "append": bench_append(old, args.runs, APPENDS),
            "mixed_fleet": mixed_fleet(old),
        }
    result = {
        "benchmark": "index_ab",
        "machine": machine(load),
        "versions": versions(),
        "parameters": {"runs": args.runs, "old": args.old, "writes": WRITES, "appends": APPENDS},
        "method": "interleaved rounds (order alternating), medians over rounds of the mean per call",
        "seconds": round(time.monotonic() - started, 1),
        "load_average_1m_after": round(load_average(), 2),
        **body,
    }
    summary = {part: body[part]["summary"] for part in ("write", "append")}
    print(json.dumps({**summary, "mixed_fleet": body["mixed_fleet"]}, indent=2))
    if not args.no_write:
        write_result("index_ab", result)
    return result


if __name__ == "__main__":
    main()
