"""Files precision / recall on bash-only turns WITHOUT their final diff (the [shell-files] measure).

Usage, from the repository root::

    python -m evals.extraction.shell_files PATH... [--json] [--show N]

Every mini-swe-agent run found under the paths (read with the backfill importers) is scored the way a live
turn looks: the commands that print the whole working-tree diff (``git diff``, ``git diff --cached``, the
submit line) are removed from the turn (what else such a call did, ``rm scratch.py`` before the submit
line, is kept), then ``extract`` runs and its files are compared with the files of
the run's final patch (``info.submission``) **that some remaining command of the turn names** (its path or
its file name appears in a command). A file of the patch that no command names (written by a generator,
renamed by a tool) cannot be known from the turn's commands and is not counted; the count of such files is
reported. Micro-averaged over files, like ``fixmem eval-extraction``.

Pure apart from reading the files: ``score_event`` takes a turn and its patch and returns the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ingest.importers import import_file, iter_files
from ingest.schema import ToolEvent, TurnEvent
from workers.extraction import extract
from workers.extraction.diffs import parse_patch
from workers.extraction.files import prints_full_diff
from workers.extraction.tools import Family, family_of, shell_command_of

BASH_ONLY_FORMATS = ("mini-swe-agent",)


@dataclass
class ShellRun:
    """One run: the patch files its commands name, and what extraction found without the final diff."""

    source: str
    instance: str
    expected: list[str]
    unnamed: list[str]  # patch files no command of the turn names
    found: list[str]

    @property
    def hits(self) -> int:
        """Found files that are expected."""
        return len(set(self.found) & set(self.expected))


@dataclass
class ShellReport:
    """All scored runs."""

    runs: list[ShellRun] = field(default_factory=list)

    def totals(self) -> dict[str, Any]:
        """Micro-averaged precision and recall over files."""
        found = sum(len(r.found) for r in self.runs)
        expected = sum(len(r.expected) for r in self.runs)
        hits = sum(r.hits for r in self.runs)
        return {
            "runs": len(self.runs),
            "files_expected": expected,
            "files_found": found,
            "files_unnamed_in_patch": sum(len(r.unnamed) for r in self.runs),
            "precision": round(hits / found, 4) if found else 1.0,
            "recall": round(hits / expected, 4) if expected else 1.0,
            "runs_exact": sum(1 for r in self.runs if set(r.found) == set(r.expected)),
        }


def tuning_half(instance: str) -> bool:
    """The half rules are decided on: ``sha256(instance)`` even (every run of a task in one half)."""
    return int(hashlib.sha256(instance.encode()).hexdigest(), 16) % 2 == 0


def halves(report: ShellReport) -> dict[str, dict[str, Any]]:
    """The totals of the tuning half and of the reported half (never decide on the latter)."""
    tune = ShellReport([r for r in report.runs if tuning_half(r.instance)])
    held = ShellReport([r for r in report.runs if not tuning_half(r.instance)])
    return {"tune": tune.totals(), "report": held.totals()}


def prints_final_diff(event: ToolEvent) -> bool:
    """Whether the call prints the whole working-tree diff (``git diff``, ``--cached``, ``submit``)."""
    if event.tool.strip().lower() == "submit":
        return True
    return family_of(event.tool, event.input) is Family.SHELL and prints_full_diff(
        shell_command_of(event.input)
    )


def _without_final_diff(events: Sequence[ToolEvent]) -> list[ToolEvent]:
    """The turn as it looks live: calls that print the whole diff removed; when such a call also did
    something else first (``rm scratch.py`` then the submit line), that part is kept, with no output."""
    kept: list[ToolEvent] = []
    for event in events:
        if not prints_final_diff(event):
            kept.append(event)
            continue
        lines = shell_command_of(event.input).splitlines()
        rest = [
            line
            for line in lines
            if line.strip() and "COMPLETE_TASK_AND_SUBMIT" not in line and not prints_full_diff(line)
        ]
        if rest and event.tool.strip().lower() != "submit":
            kept.append(
                event.model_copy(update={"input": {**event.input, "command": "\n".join(rest)}, "output": ""})
            )
    return kept


def _named(path: str, commands: Sequence[str]) -> bool:
    name = posixpath.basename(path)
    return any(path in c or name in c for c in commands)


def score_event(event: TurnEvent, patch: str, *, source: str) -> ShellRun:
    """Score one turn against its final patch, with the final diff removed (see the module doc)."""
    kept = _without_final_diff(event.tool_events)
    commands = [shell_command_of(t.input) for t in kept]
    patch_files = list(dict.fromkeys(d.path for d in parse_patch(patch)))
    expected = [p for p in patch_files if _named(p, commands)]
    entry = extract(event.model_copy(update={"tool_events": kept})).entry
    return ShellRun(
        source=source,
        instance=event.harness_meta.session_id or source,
        expected=expected,
        unnamed=[p for p in patch_files if p not in expected],
        found=entry.files if entry else [],
    )


def score_paths(paths: Sequence[Path]) -> ShellReport:
    """Import every bash-only log under ``paths`` and score the runs that have a final patch."""
    report = ShellReport()
    for path in iter_files(list(paths)):
        imported = import_file(path, owner="eval")
        if imported.format not in BASH_ONLY_FORMATS or len(imported.events) != 1:
            continue
        doc = orjson.loads(path.read_bytes())
        patch = str(((doc.get("info") or {}).get("submission")) or "")
        if not parse_patch(patch):
            continue
        report.runs.append(score_event(imported.events[0], patch, source=str(path)))
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report (text or ``--json``)."""
    parser = argparse.ArgumentParser(prog="python -m evals.extraction.shell_files", description=__doc__)
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--show", type=int, default=20, help="print at most N runs that differ")
    args = parser.parse_args(argv)
    report = score_paths(args.paths)
    if args.json:
        runs = [asdict(r) for r in report.runs]
        print(json.dumps({"totals": report.totals(), "halves": halves(report), "runs": runs}, indent=1))
        return 0
    shown = 0
    for run in report.runs:
        if set(run.found) != set(run.expected) and shown < args.show:
            shown += 1
            missing = sorted(set(run.expected) - set(run.found))
            extra = sorted(set(run.found) - set(run.expected))
            print(f"{run.instance}: missing={missing} extra={extra}")
    print(json.dumps(report.totals()))
    for name, totals in halves(report).items():
        print(f"{name} half: {json.dumps(totals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
