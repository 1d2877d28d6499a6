"""JUnit XML test reports as what a CI verdict's link carries: the tests that ran and the ones that failed.

Pure: bytes in, a ``JUnitRun`` out; raises ``JUnitError`` naming the file. One reader for the reports of
pytest (``--junitxml``), jest (``jest-junit``), go (``gotestsum --junitfile``) and cargo-nextest
(``[profile.ci.junit]``): each ``<testcase>`` is a test, its id ``<where>::<name>`` where ``where`` is its
``file`` attribute when the report has one (pytest's xunit1, jest-junit with ``addFileAttribute``), else its
``classname`` (pytest: the dotted module and class, ``tests.test_calc.TestAdd``; go: the package import
path; nextest: the binary id), else the suite's name. A case with ``<failure>`` or ``<error>`` failed; one
with ``<skipped>`` did not run and is left out. ``<testsuites>`` nest (nextest, jest) or not (go, pytest).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass

from ingest.links import MAX_LINK_FAILED, MAX_LINK_TESTS, MAX_TEST_ID_CHARS


class JUnitError(ValueError):
    """Raised when a file is no JUnit XML report (not XML, no ``testsuite``/``testcase`` elements)."""


@dataclass(frozen=True)
class JUnitRun:
    """A CI run's tests, by id (``where::name``): those that ran and those that failed (a subset)."""

    tests: tuple[str, ...]
    failed: tuple[str, ...]
    skipped: int = 0

    def link_fields(self) -> dict[str, list[str]]:
        """``tests`` and ``failed`` for a ``VerdictLink``: failed first, each list cut to its bound."""
        failed = list(dict.fromkeys(self.failed))[:MAX_LINK_FAILED]
        rest = [t for t in dict.fromkeys(self.tests) if t not in set(failed)]
        return {"tests": [*failed, *rest][:MAX_LINK_TESTS], "failed": failed}

    def summary(self) -> str:
        """``12 passed, 1 failed, 2 skipped``."""
        passed = len(self.tests) - len(self.failed)
        return f"{passed} passed, {len(self.failed)} failed, {self.skipped} skipped"


def parse_junit(data: bytes, *, source: str = "report") -> JUnitRun:
    """The tests of one JUnit XML report; raises JUnitError naming ``source``."""
    try:
        root = ET.fromstring(data)  # noqa: S314 - see the import
    except ET.ParseError as exc:
        raise JUnitError(f"{source}: not XML ({exc})") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitError(f"{source}: not a JUnit report (root element <{root.tag}>, not <testsuites>)")
    tests: list[str] = []
    failed: list[str] = []
    skipped = 0
    for suite_name, case in _cases(root, ""):
        name = case.get("name") or ""
        where = case.get("file") or case.get("classname") or suite_name
        test_id = f"{where}::{name}"[:MAX_TEST_ID_CHARS] if where else name[:MAX_TEST_ID_CHARS]
        if not test_id.strip():
            continue
        if case.find("skipped") is not None:
            skipped += 1
            continue
        tests.append(test_id)
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(test_id)
    if not tests and not skipped:
        raise JUnitError(f"{source}: a JUnit report without a test case")
    return JUnitRun(tuple(tests), tuple(failed), skipped)


def merge(runs: Iterable[JUnitRun]) -> JUnitRun:
    """The reports of one CI run (shards, one per language) as one run."""
    every = list(runs)
    return JUnitRun(
        tuple(t for r in every for t in r.tests),
        tuple(t for r in every for t in r.failed),
        sum(r.skipped for r in every),
    )


def _cases(element: ET.Element, suite: str) -> Iterable[tuple[str, ET.Element]]:
    for child in element:
        if child.tag == "testsuite":
            yield from _cases(child, child.get("name") or suite)
        elif child.tag == "testcase":
            yield suite, child
        elif child.tag == "testsuites":
            yield from _cases(child, suite)
