"""The JUnit path on reports real runners wrote (pytest, Node's test runner, gotestsum), committed under
``evals/verdicts/data/junit``: every report is read as it states its own counts, and the coverage rule
decides each entry as a reader of the report would. The committed results are what the scoring gives."""

from __future__ import annotations

import json

from evals.verdicts.junit_runs import RESULTS, score


def test_every_runners_report_is_read_and_decided_right() -> None:
    result = score()
    assert result["all_read"], {k: (r["read"], r["stated"]) for k, r in result["reports"].items()}
    assert result["all_decided"], {k: (r["decided"], r["expected"]) for k, r in result["reports"].items()}
    assert len(result["reports"]) == 4 and result["reports"]["pytest-fixmem.xml"]["read"]["tests"] > 50
    assert json.loads(RESULTS.read_text()) == json.loads(json.dumps(result))
