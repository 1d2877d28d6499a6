"""The JUnit path on reports real test runners wrote (``python -m evals.verdicts.junit_runs``).

``--produce`` (by hand: it runs pytest, Node's test runner and gotestsum) writes the reports under
``data/junit/``: this repository's own suites run by pytest (all passing), a small project run by pytest
and by ``node --test --test-reporter=junit`` with one failing test each, and gotestsum reading the
committed ``go test -json`` stream of ``tests/fixtures/junit`` (no Go toolchain here). Scoring (also in the
test suite, over the committed reports):

- **reading**: per report, the test cases ``ingest.junit.parse_junit`` reads against the counts the
  report states about itself (its ``<testsuite>``/``<testsuites>`` ``tests``, ``failures``, ``errors``,
  ``skipped`` attributes, summed over the innermost suites), and the failed test ids;
- **deciding**: for entries of known files, what the worker's coverage rule
  (``workers.linker.coverage_outcome``) decides from that run: ``partial`` where a failing test covers the
  entry's files, ``fixed`` when nothing failed, nothing when tests failed elsewhere only — against the
  outcome a reader of the report expects.

Writes ``results/junit_runs.json`` with ``--write``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ingest.junit import parse_junit
from ingest.links import VerdictLink
from store.entry import FixEntry
from workers.linker import coverage_outcome

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REPORTS = HERE / "data" / "junit"
RESULTS = HERE / "results" / "junit_runs.json"

# Per report: entries by their files, and the outcome the run should give each (None: no verdict).
EXPECTED: dict[str, dict[str, str | None]] = {
    "pytest-fixmem.xml": {"ingest/junit.py": "fixed", "workers/linker.py": "fixed", "docs/x.md": "fixed"},
    "pytest-shop.xml": {"shop/rows.py": "partial", "shop/calc.py": None, "README.md": None},
    "node-shop.xml": {"src/price.js": "partial", "src/cart.js": None},
    "gotestsum-widgets.xml": {"calc/calc.go": "partial", "io/reader.go": None},
}

_PY_SHOP = {
    "shop/__init__.py": "",
    "shop/calc.py": "def add(a, b):\n    return a + b\n",
    "shop/rows.py": "def parse_row(line):\n    return line.split(';')\n",  # the bug: commas expected
    "tests/test_calc.py": "from shop.calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "tests/test_rows.py": (
        "import pytest\nfrom shop.rows import parse_row\n\n"
        "def test_parse_row_splits_on_commas():\n    assert parse_row('a,b') == ['a', 'b']\n\n"
        "@pytest.mark.skip(reason='later')\ndef test_quoted():\n    pass\n"
    ),
}
_JS_SHOP = {
    "src/price.js": "exports.price = (n) => n * 1.2;\n",
    "src/cart.js": "exports.total = (xs) => xs.reduce((a, b) => a + b, 0);\n",
    "test/price.test.js": (
        "const test = require('node:test'); const assert = require('node:assert');\n"
        "const { price } = require('../src/price.js');\n"
        "test('price adds VAT', () => { assert.strictEqual(price(10), 12.5); });\n"
    ),
    "test/cart.test.js": (
        "const test = require('node:test'); const assert = require('node:assert');\n"
        "const { total } = require('../src/cart.js');\n"
        "test('cart totals', () => { assert.strictEqual(total([1, 2]), 3); });\n"
    ),
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def produce(out: Path = REPORTS) -> None:
    """Run the real runners and keep their reports (needs pytest, node >= 20 and gotestsum)."""
    out.mkdir(parents=True, exist_ok=True)
    suites = ["tests/ingest/test_junit.py", "tests/workers/test_linker.py", "tests/store/test_usage.py"]
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1"]
    subprocess.run([*pytest, *suites, f"--junitxml={out / 'pytest-fixmem.xml'}"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        shop = Path(tmp) / "shop"
        _write(shop, _PY_SHOP)
        subprocess.run([*pytest, "tests", f"--junitxml={out / 'pytest-shop.xml'}"], cwd=shop, check=False)
        js = Path(tmp) / "js"
        _write(js, _JS_SHOP)
        node = [
            "node",
            "--test",
            "--test-reporter=junit",
            f"--test-reporter-destination={out / 'node-shop.xml'}",
        ]
        subprocess.run([*node, "test/"], cwd=js, check=False)
        stream = ROOT / "tests" / "fixtures" / "junit" / "go-test.jsonl"
        raw = f"cat {stream}"
        gotestsum = [
            "gotestsum",
            f"--junitfile={out / 'gotestsum-widgets.xml'}",
            "--raw-command",
            "--",
            "sh",
            "-c",
            raw,
        ]
        subprocess.run(gotestsum, check=False, env={**os.environ, "NO_COLOR": "1"})


def stated(data: bytes) -> dict[str, int]:
    """What a report says of itself: tests, failed (failures + errors) and, where it says so, skipped —
    from its innermost suites' attributes (a ``<testsuites>`` total repeats them), else from the
    ``<!-- tests N -->`` comments Node's reporter writes instead (it puts no counts in attributes)."""
    root = ET.fromstring(data)  # noqa: S314 - our own reports
    suites = [s for s in root.iter("testsuite") if s.find("testsuite") is None] or [root]
    if not any(s.get("tests") for s in suites):
        comments = dict(re.findall(rb"<!-- (tests|fail|skipped) (\d+) -->", data))
        return {"tests": int(comments.get(b"tests", 0)), "failed": int(comments.get(b"fail", 0)),
                "skipped": int(comments.get(b"skipped", 0))}  # fmt: skip
    total = {"tests": 0, "failed": 0}
    for suite in suites:
        total["tests"] += int(suite.get("tests") or 0)
        total["failed"] += int(suite.get("failures") or 0) + int(suite.get("errors") or 0)
    if any(s.get("skipped") is not None for s in suites):  # gotestsum does not say it
        total["skipped"] = sum(int(s.get("skipped") or 0) for s in suites)
    return total


def _entry(path: str) -> FixEntry:
    return FixEntry.model_validate(
        {"id": "fix-0000000000000000", "ts": 0.0, "project": "p", "task": "t", "files": [path], "symbols": [],
         "errors": [], "tests": None, "outcome": "unverified", "solution": "", "tags": []}
    )  # fmt: skip


def score(reports: Path = REPORTS) -> dict[str, Any]:
    """Reading and deciding, per committed report (pure but for reading them)."""
    out: dict[str, Any] = {}
    for name, expected in EXPECTED.items():
        data = (reports / name).read_bytes()
        run = parse_junit(data, source=name)
        says = stated(data)
        link = VerdictLink.model_validate({"commit": "0" * 40, **run.link_fields()})
        decided = {path: coverage_outcome(link, _entry(path)) for path in expected}
        read = {"tests": len(run.tests) + run.skipped, "failed": len(run.failed), "skipped": run.skipped}
        read = {k: v for k, v in read.items() if k in says}  # compare what the report states
        out[name] = {
            "stated": says, "read": read, "read_matches": read == says, "failed": list(run.failed),
            "decided": decided, "expected": expected, "decided_right": decided == expected,
        }  # fmt: skip
    return {
        "reports": out,
        "all_read": all(r["read_matches"] for r in out.values()),
        "all_decided": all(r["decided_right"] for r in out.values()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--produce", action="store_true", help="run the runners again (by hand)")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.produce:
        if not shutil.which("node") or not shutil.which("gotestsum"):
            raise SystemExit("--produce needs node (>= 20) and gotestsum on PATH")
        produce()
    result = score()
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    if args.write:
        RESULTS.write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
