"""Verdicts that agent logs already carry, as ``harness_meta.verdict`` of the turn they judge (pure).

- **SWE-bench** ``report.json`` beside a mini-swe-agent / SWE-agent trajectory: ``resolved`` of the
  instance (the harness's ``{instance_id: report}`` form, one instance's flat report, or a run summary's
  ``resolved_ids`` / ``unresolved_ids``) -> a ``benchmark`` verdict, ``fixed`` or ``partial``.
- **OpenHands** evaluation output: ``test_result.report.resolved`` (or ``test_result.resolved``) -> a
  ``benchmark`` verdict. The resolver's ``success`` is the model's own judgement: not a verdict.
- **Aider**: a ``/run`` or ``/test`` the user ran in a later request, with no edit between it and the last
  editing request, is a test run outside the agent's turn -> a ``ci`` verdict on that editing request,
  when its output says plainly whether the tests passed (pytest, unittest, jest summaries).

A verdict is never part of a turn's derived id (``ingest.schema``), so importing a log again after this
rule gives the same entries, now judged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from ingest.schema import TurnEvent, TurnVerdict

REPORT_NAME = "report.json"
MAX_REPORT_BYTES = 64 << 20

_PYTEST_SUMMARY = re.compile(
    r"^=+ (?P<body>.*?\b(?:passed|failed|error|errors|no tests ran)\b.*?) =+\s*$", re.M
)
_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?|xfailed|xpassed|skipped|deselected|warnings?)\b")
_UNITTEST_OK = re.compile(r"^Ran \d+ tests? in [\d.]+s\s*\n+\s*OK\b", re.M)
_UNITTEST_FAILED = re.compile(r"^Ran \d+ tests? in [\d.]+s\s*\n+\s*FAILED \(", re.M)
_JEST = re.compile(r"^Tests:\s+(?P<body>.*\btotal)\s*$", re.M)


def swebench_resolved(report: bytes, instance_id: str) -> bool | None:
    """Whether ``instance_id`` was resolved according to a SWE-bench ``report.json``; None when it does
    not say (unreadable, another instance, no ``resolved``)."""
    try:
        doc = orjson.loads(report)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    keyed = doc.get(instance_id) if instance_id else None
    if isinstance(keyed, dict) and isinstance(keyed.get("resolved"), bool):
        return bool(keyed["resolved"])
    if isinstance(doc.get("resolved"), bool):  # one instance's report, as the harness's log folder keeps it
        return bool(doc["resolved"])
    for field, value in (("resolved_ids", True), ("unresolved_ids", False)):
        ids = doc.get(field)
        if instance_id and isinstance(ids, list) and instance_id in ids:
            return value
    return None


def openhands_resolved(record: dict[str, Any]) -> bool | None:
    """``resolved`` of an OpenHands evaluation record's ``test_result`` (its ``report``), else None."""
    result = record.get("test_result")
    if not isinstance(result, dict):
        return None
    report = result.get("report")
    for holder in (report if isinstance(report, dict) else {}, result):
        if isinstance(holder.get("resolved"), bool):
            return bool(holder["resolved"])
    return None


def benchmark_verdict(resolved: bool, detail: str) -> dict[str, Any]:
    """A ``harness_meta.verdict`` value for a benchmark's resolved / not resolved."""
    return {"source": "benchmark", "outcome": "fixed" if resolved else "partial", "detail": detail}


def summary_passed(output: str) -> bool | None:
    """Whether a test command's output says its tests passed (True), failed (False), or neither (None).

    Read from the summary line only: pytest's ``== 3 passed, 1 failed in 0.1s ==``, unittest's
    ``Ran N tests`` + ``OK`` / ``FAILED (…)``, jest's ``Tests: … total``. No tests collected is None.
    """
    summaries = _PYTEST_SUMMARY.findall(output) + _JEST.findall(output)
    if summaries:
        counts = dict((kind.rstrip("s") if kind.startswith("error") else kind, int(n))
                      for n, kind in _COUNT.findall(summaries[-1]))  # fmt: skip
        if counts.get("failed", 0) or counts.get("error", 0):
            return False
        return True if counts.get("passed", 0) else None
    if _UNITTEST_FAILED.search(output):
        return False
    if _UNITTEST_OK.search(output):
        return True
    return None


def summary_line(output: str) -> str:
    """The test summary of ``output`` without its ``=`` rulers (for a verdict's detail), else ``""``."""
    found = _PYTEST_SUMMARY.findall(output) + _JEST.findall(output)
    return found[-1].strip()[:200] if found else ""


def with_verdict(events: Sequence[TurnEvent], session_id: str, verdict: dict[str, Any]) -> list[TurnEvent]:
    """``events`` with ``verdict`` on the last turn of session ``session_id`` (the one the benchmark judged:
    the run's final state); the others unchanged."""
    last = max((i for i, e in enumerate(events) if e.harness_meta.session_id == session_id), default=None)
    if last is None:
        return list(events)
    judged = events[last].harness_meta.model_copy(update={"verdict": TurnVerdict.model_validate(verdict)})
    return [e.model_copy(update={"harness_meta": judged}) if i == last else e for i, e in enumerate(events)]
