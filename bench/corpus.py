"""The shape of real agent turns, measured on the shared agent-log corpus (``bench.generator`` copies it).

Run: ``python -m bench.corpus [--corpus DIR]``: prints the measured shape as JSON.

Each log is read with the backfill importers (``ingest.importers``) and each turn event is extracted
(``workers.extraction``), then counted: tool events per turn, output characters per tool event by tool
family, the bytes of the event on the wire, the share of turns that ran tests (and of those whose last run
failed), the share of tool events that failed (exit code not 0, or ``ok`` false), files per entry and the
share of turns that touched no file. ``DEFAULT_SHAPE`` holds the figures measured on
``/work/shared/data/agent-logs`` (22 turns from mini-swe-agent, SWE-agent, OpenHands, Aider and Codex logs)
so the generator is the same on a machine without the corpus.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SHARED_CORPUS = Path("/work/shared/data/agent-logs")
QUANTILES = (0, 10, 25, 50, 75, 90, 100)  # percent points of every distribution below


@dataclass(frozen=True)
class Shape:
    """Distributions of real turns: quantiles at ``QUANTILES`` and shares in 0..1."""

    turns: int
    tool_events_per_turn: tuple[float, ...]
    output_chars_by_family: dict[str, tuple[float, ...]]  # per tool event
    family_share: dict[str, float]  # of tool events
    wire_bytes_per_turn: tuple[float, ...]
    other_bytes_per_tool_event: tuple[float, ...]  # wire bytes that are not output (inputs, texts)
    share_turns_with_tests: float
    share_test_turns_failing: float  # last test run failed, among turns with tests
    share_tool_events_failing: float
    share_turns_no_file: float
    files_per_entry: dict[int, float] = field(default_factory=dict)  # files -> share of entries

    def to_json(self) -> dict[str, Any]:
        """A JSON value (quantile keys ``p0`` … ``p100``)."""
        data = asdict(self)
        for key in ("tool_events_per_turn", "wire_bytes_per_turn", "other_bytes_per_tool_event"):
            data[key] = _named(data[key])
        data["output_chars_by_family"] = {k: _named(v) for k, v in self.output_chars_by_family.items()}
        data["files_per_entry"] = {str(k): v for k, v in self.files_per_entry.items()}
        return data


def _named(values: tuple[float, ...]) -> dict[str, float]:
    return {f"p{q}": v for q, v in zip(QUANTILES, values, strict=True)}


# Measured on /work/shared/data/agent-logs with `python -m bench.corpus` (35 files, 22 turns).
DEFAULT_SHAPE = Shape(
    turns=22,
    tool_events_per_turn=(0.0, 1.0, 1.2, 5.0, 20.2, 30.7, 49.0),
    output_chars_by_family={
        "edit": (0.0, 38.4, 140.0, 250.0, 683.0, 3036.6, 8989.0),
        "other": (40.0, 55.4, 92.0, 201.5, 383.0, 651.8, 803.0),
        "python": (95.0, 884.0, 1729.0, 1893.0, 2858.0, 3219.0, 3338.0),
        "read": (84.0, 138.0, 240.5, 415.0, 4953.0, 20425.0, 20740.0),
        "shell": (0.0, 0.0, 17.0, 119.0, 549.2, 1304.9, 10030.0),
    },
    family_share={"shell": 0.599, "edit": 0.176, "read": 0.116, "python": 0.079, "other": 0.03},
    wire_bytes_per_turn=(711.0, 1314.5, 3261.5, 13833.0, 38210.2, 73016.4, 88309.0),
    other_bytes_per_tool_event=(555.8, 588.0, 633.0, 812.2, 1310.0, 2164.0, 8652.0),
    share_turns_with_tests=0.182,
    share_test_turns_failing=0.25,
    share_tool_events_failing=0.228,
    share_turns_no_file=0.136,
    files_per_entry={1: 0.895, 2: 0.105},
)


def quantiles(values: list[float]) -> tuple[float, ...]:
    """``values`` at ``QUANTILES`` (linear interpolation); zeros for an empty list."""
    if not values:
        return tuple(0.0 for _ in QUANTILES)
    ordered = sorted(values)
    out = []
    for q in QUANTILES:
        at = (len(ordered) - 1) * q / 100
        low = int(at)
        high = min(low + 1, len(ordered) - 1)
        out.append(round(ordered[low] + (ordered[high] - ordered[low]) * (at - low), 1))
    return tuple(out)


def measure(corpus: Path) -> Shape:
    """The shape of the turns in the agent logs under ``corpus`` (see the module docstring)."""
    from ingest.importers import import_file, iter_files  # noqa: PLC0415 - only when measuring
    from workers.extraction import extract  # noqa: PLC0415
    from workers.extraction.tools import family_of  # noqa: PLC0415

    per_turn: list[float] = []
    wire: list[float] = []
    other: list[float] = []
    by_family: dict[str, list[float]] = {}
    families: Counter[str] = Counter()
    failing = with_tests = tests_failing = no_file = 0
    files: Counter[int] = Counter()
    for path in iter_files([corpus]):
        for event in import_file(path, owner="bench").events:
            per_turn.append(len(event.tool_events))
            size = len(event.to_wire())
            outputs = sum(len(t.output) for t in event.tool_events)
            wire.append(size)
            if event.tool_events:
                other.append((size - outputs) / len(event.tool_events))
            for tool in event.tool_events:
                family = family_of(tool.tool, tool.input).value
                family = family if family in DEFAULT_SHAPE.output_chars_by_family else "other"
                families[family] += 1
                by_family.setdefault(family, []).append(len(tool.output))
                failing += (tool.exit_code not in (0, None)) or tool.ok is False
            entry = extract(event).entry
            if entry is None:
                no_file += 1
                continue
            files[len(entry.files)] += 1
            if entry.tests is not None:
                with_tests += 1
                tests_failing += entry.tests.ok is False
    tools = sum(families.values()) or 1
    turns = len(per_turn) or 1
    entries = sum(files.values()) or 1
    return Shape(
        turns=len(per_turn),
        tool_events_per_turn=quantiles(per_turn),
        output_chars_by_family={k: quantiles(v) for k, v in sorted(by_family.items())},
        family_share={k: round(n / tools, 3) for k, n in families.most_common()},
        wire_bytes_per_turn=quantiles(wire),
        other_bytes_per_tool_event=quantiles(other),
        share_turns_with_tests=round(with_tests / turns, 3),
        share_test_turns_failing=round(tests_failing / max(1, with_tests), 3),
        share_tool_events_failing=round(failing / tools, 3),
        share_turns_no_file=round(no_file / turns, 3),
        files_per_entry={k: round(n / entries, 3) for k, n in sorted(files.items())},
    )


def main(argv: list[str] | None = None) -> None:
    """Print the measured shape of the corpus as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=SHARED_CORPUS)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.corpus).to_json(), indent=2))


if __name__ == "__main__":
    main()
