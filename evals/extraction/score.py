"""How right extraction is on real agent logs (``fixmem eval-extraction PATH...``).

For every mini-swe-agent, SWE-agent and OpenHands run found under the paths (read with the backfill
importers, ``ingest.importers``), the extracted entry is compared with what the log itself proves:

- **files**: precision and recall against the files of the run's final patch (``info.submission``,
  ``test_result.git_patch`` or ``git_patch``), per instance and micro-averaged over all instances;
- **error provenance**: every error signature must be the normalized form of an actual line (or a line and
  the next) of one of the run's tool outputs;
- **outcome**: agreement with a hand-made label of the agent's own last test run (``--labels``, a JSON
  object ``{instance: {"outcome": …, "evidence": …}}``); instances without a label are shown, not scored.

The files figures are also given per kind of harness:

- **structured**: formats whose edits go through an edit tool (SWE-agent, OpenHands), where the files are
  exact (the goal is 1.00 / 1.00);
- **bash-only, live**: formats that edit only through the shell (mini-swe-agent), scored as a live turn
  looks, with the commands that print the whole diff removed, against the patch files some remaining
  command names (``evals.extraction.shell_files``; the issue [shell-files] measure).

Runs with no ground-truth patch (Aider, Codex, exported OpenHands event lists) are listed and not scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evals.extraction.shell_files import BASH_ONLY_FORMATS, ShellReport, ShellRun, prints_final_diff
from evals.extraction.shell_files import score_event as score_live
from ingest.importers import import_file, iter_files
from ingest.schema import TurnEvent
from workers.extraction import extract, normalize_error
from workers.extraction.diffs import parse_patch

SCORED_FORMATS = ("mini-swe-agent", "swe-agent", "openhands")


@dataclass
class InstanceReport:
    """One run: what extraction found against what the log proves."""

    source: str
    instance: str
    format: str
    files_expected: list[str]
    files_found: list[str]
    errors: list[str]
    errors_unproven: list[str]
    outcome: str | None
    outcome_label: str | None
    tests: str | None
    skip: str | None = None
    files_without_final_diff: list[str] = field(default_factory=list)  # ablation: final git diff removed
    live: ShellRun | None = None  # bash-only formats: scored as a live turn (evals.extraction.shell_files)

    @property
    def true_positives(self) -> int:
        """Files found that are in the final patch."""
        return len(set(self.files_found) & set(self.files_expected))

    @property
    def precision(self) -> float:
        """Share of found files that are in the final patch (1.0 when nothing was found and none expected)."""
        return (
            self.true_positives / len(self.files_found)
            if self.files_found
            else float(not self.files_expected)
        )

    @property
    def recall(self) -> float:
        """Share of the final patch's files that were found."""
        return self.true_positives / len(self.files_expected) if self.files_expected else 1.0


@dataclass
class ExtractionReport:
    """All instances plus the runs that could not be scored."""

    instances: list[InstanceReport] = field(default_factory=list)
    unscored: list[str] = field(default_factory=list)

    def totals(self) -> dict[str, Any]:
        """Micro-averaged file precision/recall, error provenance and outcome agreement."""
        found = sum(len(i.files_found) for i in self.instances)
        expected = sum(len(i.files_expected) for i in self.instances)
        hits = sum(i.true_positives for i in self.instances)
        found_ab = sum(len(i.files_without_final_diff) for i in self.instances)
        hits_ab = sum(len(set(i.files_without_final_diff) & set(i.files_expected)) for i in self.instances)
        errors = sum(len(i.errors) for i in self.instances)
        unproven = sum(len(i.errors_unproven) for i in self.instances)
        labelled = [i for i in self.instances if i.outcome_label is not None]
        agree = sum(1 for i in labelled if i.outcome == i.outcome_label)
        return {
            "instances": len(self.instances),
            "files_precision": round(hits / found, 4) if found else 1.0,
            "files_recall": round(hits / expected, 4) if expected else 1.0,
            "files_precision_without_final_diff": round(hits_ab / found_ab, 4) if found_ab else 1.0,
            "files_recall_without_final_diff": round(hits_ab / expected, 4) if expected else 1.0,
            "errors": errors,
            "errors_with_provenance": errors - unproven,
            "outcome_labelled": len(labelled),
            "outcome_agree": agree,
            "structured": self._structured_totals(),
            "bash_only_live": ShellReport([i.live for i in self.instances if i.live is not None]).totals(),
        }

    def _structured_totals(self) -> dict[str, Any]:
        """Files precision/recall over the formats whose edits go through an edit tool."""
        structured = [i for i in self.instances if i.format not in BASH_ONLY_FORMATS]
        found = sum(len(i.files_found) for i in structured)
        expected = sum(len(i.files_expected) for i in structured)
        hits = sum(i.true_positives for i in structured)
        return {
            "instances": len(structured),
            "files_precision": round(hits / found, 4) if found else 1.0,
            "files_recall": round(hits / expected, 4) if expected else 1.0,
        }


def ground_truth_patches(path: Path, fmt: str) -> list[str]:
    """The final patch of each run in a log file, in the importer's event order."""
    data = path.read_bytes()
    if fmt in {"mini-swe-agent", "swe-agent"}:
        doc = orjson.loads(data)
        return [str(((doc.get("info") or {}).get("submission")) or "")]
    if fmt == "openhands" and path.suffix == ".jsonl":
        patches = []
        for line in data.splitlines():
            if not line.strip():
                continue
            row = orjson.loads(line)
            result = row.get("test_result")
            patch = result.get("git_patch") if isinstance(result, dict) else None
            patches.append(str(patch or row.get("git_patch") or ""))
        return patches
    return []


def _proven(signature: str, outputs: Iterable[str], workspace: str) -> bool:
    for output in outputs:
        lines = output.replace("\r\n", "\n").split("\n")
        for index, line in enumerate(lines):
            if signature in normalize_error(line, workspace=workspace, limit=10_000):
                return True
            if index + 1 < len(lines):
                pair = normalize_error(line + " " + lines[index + 1], workspace=workspace, limit=10_000)
                if signature in pair.replace(": ", " ").replace(":", "") or signature in pair:
                    return True
    return False


def _composite_proven(signature: str, outputs: Sequence[str], workspace: str) -> bool:
    """A signature joined from two lines (``thread 'x' panicked at p: msg``) is proven part by part."""
    if _proven(signature, outputs, workspace):
        return True
    head, _, tail = signature.rpartition(": ")
    return bool(head and tail) and _proven(head, outputs, workspace) and _proven(tail, outputs, workspace)


def evaluate_event(
    event: TurnEvent, patch: str, *, source: str, fmt: str, labels: dict[str, Any]
) -> InstanceReport:
    """Score one run's extraction against its final patch, its outputs and its label."""
    instance = event.harness_meta.session_id or source
    expected = list(dict.fromkeys(d.path for d in parse_patch(patch)))
    result = extract(event)
    entry = result.entry
    outputs = [t.output for t in event.tool_events]
    errors = entry.errors if entry else []
    unproven = [e for e in errors if not _composite_proven(e, outputs, event.workspace)]
    kept = [t for t in event.tool_events if not prints_final_diff(t)]
    ablated = extract(event.model_copy(update={"tool_events": kept})).entry
    label = labels.get(instance, {})
    return InstanceReport(
        source=source,
        instance=instance,
        format=fmt,
        files_expected=expected,
        files_found=entry.files if entry else [],
        errors=errors,
        errors_unproven=unproven,
        outcome=entry.outcome if entry else None,
        outcome_label=label.get("outcome") if isinstance(label, dict) else None,
        tests=(f"{entry.tests.command} → {entry.tests.summary}" if entry and entry.tests else None),
        skip=result.skip.value if result.skip else None,
        files_without_final_diff=ablated.files if ablated else [],
        live=score_live(event, patch, source=source) if fmt in BASH_ONLY_FORMATS else None,
    )


def evaluate_paths(paths: Sequence[Path], labels: dict[str, Any] | None = None) -> ExtractionReport:
    """Import every log under ``paths`` and score the runs that have a final patch."""
    report = ExtractionReport()
    for path in iter_files(list(paths)):
        imported = import_file(path, owner="eval")
        if imported.format is None or not imported.events:
            continue
        patches = ground_truth_patches(path, imported.format) if imported.format in SCORED_FORMATS else []
        if len(patches) != len(imported.events) or not any(patches):
            report.unscored.append(f"{path} ({imported.format}: no final patch to score against)")
            continue
        for event, patch in zip(imported.events, patches, strict=True):
            report.instances.append(
                evaluate_event(event, patch, source=str(path), fmt=imported.format, labels=labels or {})
            )
    return report


def render(report: ExtractionReport) -> str:
    """The report as a text table, one line per instance, then the totals."""
    lines = [f"{'instance':38} {'format':15} {'P':>5} {'R':>5} {'err':>3} {'prov':>4} {'outcome':11} label"]
    for i in report.instances:
        lines.append(
            f"{i.instance[:38]:38} {i.format:15} {i.precision:5.2f} {i.recall:5.2f} {len(i.errors):3d} "
            f"{len(i.errors) - len(i.errors_unproven):4d} {i.outcome or i.skip or '-':11} "
            f"{i.outcome_label or '-'}{'' if i.outcome_label in (None, i.outcome) else '  MISMATCH'}"
        )
        if set(i.files_without_final_diff) != set(i.files_expected):
            lines.append(f"    without the final diff: {i.files_without_final_diff}")
        missing = sorted(set(i.files_expected) - set(i.files_found))
        extra = sorted(set(i.files_found) - set(i.files_expected))
        if missing or extra:
            lines.append(f"    missing={missing} extra={extra}")
        lines.extend(f"    unproven error: {e}" for e in i.errors_unproven)
    totals = report.totals()
    lines.append(
        f"TOTAL {totals['instances']} instances: files precision {totals['files_precision']:.3f}, "
        f"recall {totals['files_recall']:.3f} (without the final git diff: precision "
        f"{totals['files_precision_without_final_diff']:.3f}, "
        f"recall {totals['files_recall_without_final_diff']:.3f}); "
        f"errors with provenance {totals['errors_with_provenance']}/"
        f"{totals['errors']}; outcome agrees {totals['outcome_agree']}/{totals['outcome_labelled']} labelled"
    )
    structured, live = totals["structured"], totals["bash_only_live"]
    lines.append(
        f"  structured-tool formats, {structured['instances']} instances: files precision "
        f"{structured['files_precision']:.3f}, recall {structured['files_recall']:.3f}"
    )
    lines.append(
        f"  bash-only formats as live turns (final diff removed; patch files some command names), "
        f"{live['runs']} runs: files precision {live['precision']:.3f}, recall {live['recall']:.3f} "
        f"({live['files_unnamed_in_patch']} patch files no command names, not counted)"
    )
    lines.extend(f"not scored: {u}" for u in report.unscored)
    return "\n".join(lines)


def report_json(report: ExtractionReport) -> dict[str, Any]:
    """The JSON form printed by ``fixmem eval-extraction --json``."""
    return {
        "totals": report.totals(),
        "instances": [
            {**asdict(i), "precision": round(i.precision, 4), "recall": round(i.recall, 4)}
            for i in report.instances
        ],
        "unscored": report.unscored,
    }
