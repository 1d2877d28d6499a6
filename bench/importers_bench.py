"""Importer benchmark: how fast the backfill parsers turn the shared corpus of real agent logs into events.

Run: ``python -m bench.importers_bench [--corpus DIR] [--rounds N]``. Prints JSON and writes
``bench/results/importers.json``.

- *parse*: the pure parsers on bytes already in memory (detection + parse + validation + event ids).
- *import_file*: the whole file shell (stat, read from the warm page cache, detect, parse) per file.
- A *trajectory* is one agent run or session: one per mini-swe-agent / SWE-agent file, one per line of an
  OpenHands ``output.jsonl``, one per Claude Code / Codex session or Aider / OpenHands event-list file.
  Files that are not agent logs (licences, reports, patches) are walked and refused too, and counted.
Each figure is the median of ``--rounds`` rounds over the whole corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from ingest.importers import FORMATS, detect_format, import_file, iter_files
from ingest.importers.files import PARSERS

RESULTS = Path(__file__).resolve().parent / "results" / "importers.json"
SHARED = Path("/work/shared/data/agent-logs")
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "agent-logs"


def _trajectories(events: list[Any], path: Path) -> set[tuple[str, str]]:
    return {(str(e.harness_meta.harness), e.harness_meta.session_id or path.as_posix()) for e in events}


def run(corpus: Path, rounds: int) -> dict[str, Any]:
    """Benchmark figures for the corpus under ``corpus``."""
    files = list(iter_files([corpus]))
    blobs = {path: path.read_bytes() for path in files}
    formats = {path: detect_format(path, data) for path, data in blobs.items()}
    logs = [p for p in files if formats[p] is not None]
    total_bytes = sum(len(blobs[p]) for p in logs)

    per_format: dict[str, dict[str, Any]] = {
        f: {"files": 0, "bytes": 0, "events": 0, "seconds": []} for f in FORMATS
    }
    parse_seconds: list[float] = []
    shell_seconds: list[float] = []
    events = 0
    trajectories: set[tuple[str, str]] = set()
    largest = 0
    cut = 0
    for _ in range(rounds):
        started = time.perf_counter()
        for path in logs:
            fmt = formats[path]
            assert fmt is not None
            t0 = time.perf_counter()
            detect_format(path, blobs[path])
            if fmt == "claude-code" or fmt == "aider":  # these need the file shell (sidechains, directory)
                found = import_file(path, format=fmt, owner="bench").events
            else:
                found = PARSERS[fmt](blobs[path], source=path.relative_to(corpus).as_posix(), owner="bench")
            per_format[fmt]["seconds"].append(time.perf_counter() - t0)
            if len(parse_seconds) == 0:
                per_format[fmt]["files"] += 1
                per_format[fmt]["bytes"] += len(blobs[path])
                per_format[fmt]["events"] += len(found)
                events += len(found)
                trajectories |= _trajectories(found, path)
                for event in found:
                    size = len(event.to_wire())
                    largest = max(largest, size)
                    cut += bool((event.harness_meta.model_extra or {}).get("cut"))
        parse_seconds.append(time.perf_counter() - started)

        started = time.perf_counter()
        for path in files:
            import_file(path, owner="bench")
        shell_seconds.append(time.perf_counter() - started)

    parse_s = statistics.median(parse_seconds)
    shell_s = statistics.median(shell_seconds)
    mb = total_bytes / 1e6
    breakdown = {}
    for fmt, row in per_format.items():
        if not row["files"]:
            continue
        seconds = sum(row["seconds"]) / rounds
        breakdown[fmt] = {
            "files": row["files"],
            "mb": round(row["bytes"] / 1e6, 3),
            "events": row["events"],
            "ms_per_file": round(1000 * seconds / row["files"], 2),
            "mb_per_s": round(row["bytes"] / 1e6 / seconds, 1),
        }
    return {
        "corpus": str(corpus),
        "rounds": rounds,
        "files_walked": len(files),
        "log_files": len(logs),
        "not_logs_refused": len(files) - len(logs),
        "trajectories": len(trajectories),
        "events": events,
        "mb": round(mb, 3),
        "largest_event_bytes": largest,
        "events_cut_to_fit": cut,
        "parse": {
            "seconds": round(parse_s, 4),
            "trajectories_per_s": round(len(trajectories) / parse_s, 1),
            "files_per_s": round(len(logs) / parse_s, 1),
            "events_per_s": round(events / parse_s, 1),
            "mb_per_s": round(mb / parse_s, 1),
        },
        "import_file": {
            "seconds": round(shell_s, 4),
            "trajectories_per_s": round(len(trajectories) / shell_s, 1),
            "files_per_s": round(len(files) / shell_s, 1),
            "mb_per_s": round(mb / shell_s, 1),
        },
        "per_format": breakdown,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
    }


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark, print the JSON figures and write them to ``bench/results/importers.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=SHARED if SHARED.is_dir() else FIXTURES)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    figures = run(args.corpus, args.rounds)
    text = json.dumps(figures, indent=2)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
