"""JUnit XML reports as a CI verdict's tests (``ingest.junit``): pytest and gotestsum run for real, jest-junit
and nextest from committed samples (tests/fixtures/junit/README.md says where their shapes come from)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.junit import JUnitError, merge, parse_junit
from ingest.links import MAX_LINK_FAILED, VerdictLink

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "junit"


def test_a_real_pytest_report(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(
        "import pytest\n\ndef test_add():\n    assert 1 + 1 == 2\n\n"
        "def test_sub():\n    assert 3 - 1 == 4\n\n"
        "@pytest.mark.skip\ndef test_later():\n    pass\n"
    )
    report = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", "tests"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    run = parse_junit(report.read_bytes(), source="junit.xml")
    assert run.tests == ("tests.test_calc::test_add", "tests.test_calc::test_sub")
    assert run.failed == ("tests.test_calc::test_sub",)
    assert run.summary() == "1 passed, 1 failed, 1 skipped"


@pytest.mark.skipif(
    shutil.which("gotestsum") is None, reason="gotestsum is not installed (Debian: gotestsum)"
)
def test_a_real_gotestsum_report(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    events = FIXTURES / "go-test.jsonl"
    subprocess.run(
        ["gotestsum", "--junitfile", str(report), "--raw-command", "--", "cat", str(events)],
        capture_output=True, check=True,
    )  # fmt: skip
    run = parse_junit(report.read_bytes())
    assert sorted(run.tests) == ["example.com/widgets/calc::TestAdd", "example.com/widgets/calc::TestSub",
                                 "example.com/widgets/io::TestRead"]  # fmt: skip
    assert run.failed == ("example.com/widgets/calc::TestSub",) and run.skipped == 1


@pytest.mark.parametrize(
    ("sample", "tests", "failed"),
    [
        ("jest-junit.xml", ["src/calc.test.js::calc adds", "src/calc.test.js::calc subtracts",
                            "src/io.test.js::io reads"], ["src/calc.test.js::calc subtracts"]),
        ("nextest.xml", ["widgets::calc::tests::adds", "widgets::calc::tests::subtracts",
                         "widgets::io::tests::reads", "widgets::integration::round_trip"],
         ["widgets::calc::tests::subtracts"]),
    ],
)  # fmt: skip
def test_committed_samples(sample: str, tests: list[str], failed: list[str]) -> None:
    run = parse_junit((FIXTURES / sample).read_bytes())
    assert (list(run.tests), list(run.failed)) == (tests, failed)


def test_the_link_fields_put_failures_first_and_stay_in_bounds() -> None:
    runs = [parse_junit((FIXTURES / s).read_bytes()) for s in ("jest-junit.xml", "nextest.xml")]
    fields = merge(runs).link_fields()
    assert fields["failed"] == ["src/calc.test.js::calc subtracts", "widgets::calc::tests::subtracts"]
    assert fields["tests"][:2] == fields["failed"] and len(fields["tests"]) == 7
    VerdictLink(commit="a" * 40, **fields)  # the schema takes them
    many = merge([parse_junit(_report(MAX_LINK_FAILED + 10))]).link_fields()
    assert len(many["failed"]) == MAX_LINK_FAILED
    VerdictLink(commit="a" * 40, **many)


def _report(failures: int) -> bytes:
    cases = "".join(f'<testcase classname="t" name="c{i}"><failure/></testcase>' for i in range(failures))
    return f"<testsuite>{cases}</testsuite>".encode()


@pytest.mark.parametrize(
    ("data", "words"),
    [(b"not xml", "not XML"), (b"<html/>", "not a JUnit report"), (b"<testsuites/>", "without a test case")],
)
def test_what_is_no_report_is_refused_by_name(data: bytes, words: str) -> None:
    with pytest.raises(JUnitError, match=words) as caught:
        parse_junit(data, source="out/junit.xml")
    assert "out/junit.xml" in str(caught.value)
