"""Error signatures as recall compares them (``store.recall.signatures``) and a view's error and file signals.

The runner rows take each signature from a REAL runner's output (``tests/fixtures/runners``) through the
real extractor, and ask with the line an agent reading that output would pass: before the fix, the
store compared whole strings, so the extractor's ``t.py::test_x - RuntimeError: …`` never met the
agent's ``RuntimeError: …`` and the error boost did nothing for real pytest failures.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import FixStore
from store.errorsig import canonical_error, error_parts
from store.recall.ranking import DEFAULT_WEIGHTS, Signals
from store.recall.signatures import ErrorIndex, error_words, overlapping_errors, same_error
from store.recall.vectors import dot_rows
from store.recall.view import ProjectView, query_terms
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry
from tests.workers.extraction.test_runner_fixtures import _event as runner_event
from workers.extraction import Limits
from workers.extraction.turn import collect_errors


@pytest.mark.parametrize(
    ("signature", "canonical"),
    [
        ("ValueError: timeout after 30 seconds", "valueerror: timeout after # seconds"),
        ("ValueError:   Timeout after # seconds", "valueerror: timeout after # seconds"),
        ("error[E0308]: mismatched types", "error[e0308]: mismatched types"),
        ("panic: runtime error: index out of range [3]", "panic: runtime error: index out of range [#]"),
        ("segfault at 0xdeadbeef", "segfault at 0x#"),
        ("TypeError: py311 only", "typeerror: py311 only"),
        ("read 1,024 bytes in 0.5s", "read # bytes in #s"),
        ("./internal/config/config.go:41:9: undefined: x", "./internal/config/config.go: undefined: x"),
        ("greet.ts(5,7): error TS2345: Argument", "greet.ts: error ts2345: argument"),
        ("SyntaxError: invalid syntax (a.py, line 3)", "syntaxerror: invalid syntax (a.py)"),
        # a position someone already wrote as ``#`` is a position (it failed to meet the raw line)
        ("CMake Error at CMakeLists.txt:# (find_package):", "cmake error at cmakelists.txt (find_package):"),
        ("CMake Error at CMakeLists.txt:27 (find_package):", "cmake error at cmakelists.txt (find_package):"),
        ("./x.go:#:#: undefined: y", "./x.go: undefined: y"),
    ],
)
def test_canonical_error(signature: str, canonical: str) -> None:
    assert canonical_error(signature) == canonical


@given(st.text(max_size=80))
def test_canonical_error_is_idempotent(text: str) -> None:
    once = canonical_error(text)
    assert canonical_error(once) == once


# signature (raw as printed, or as extraction stores it) -> (test, kind, core)
PARTS = [
    ("RuntimeError: could not connect", None, "runtimeerror", "runtimeerror: could not connect"),
    (
        "tests/test_net.py::test_connect - RuntimeError: could not connect",
        "tests/test_net.py::test_connect",
        "runtimeerror",
        "runtimeerror: could not connect",
    ),
    ("E       RuntimeError: could not connect", None, "runtimeerror", "runtimeerror: could not connect"),
    ("FAILED tests/test_net.py::test_connect", "tests/test_net.py::test_connect", None, ""),
    (
        "ERROR tests/x.py - ModuleNotFoundError: No module named 'm'",
        "tests/x.py",
        "modulenotfounderror",
        "modulenotfounderror: no module named 'm'",
    ),
    ("FAIL: test_add (test_calc.AddTests.test_add)", "test_add (test_calc.addtests)", None, ""),
    ("FAIL: test_add (test_calc.AddTests)", "test_add (test_calc.addtests)", None, ""),
    ("--- FAIL: TestAdd (0.00s)", "testadd", None, ""),
    ("  ● add › adds numbers", "add › adds numbers", None, ""),
    (
        "thread 'tests::adds' panicked at src/lib.rs: assertion `left == right` failed",
        "tests::adds",
        "panic",
        "assertion `left == right` failed",
    ),
    ("thread 'main' (7) panicked at src/a.rs:8:2: index out of bounds", None, "panic", "index out of bounds"),
    ("panic: assignment to entry in nil map [recovered]", None, "panic", "assignment to entry in nil map"),
    ("error[E0308]: mismatched types", None, "e0308", "mismatched types"),
    ("greet.ts(5,7): error TS2345: Argument of type", None, "ts2345", "argument of type"),
    ("main.c:2:13: error: ‘x’ undeclared", None, None, "‘x’ undeclared"),
    ("./calc.go:4:13: undefined: c", None, None, "undefined: c"),
    (
        'Exception in thread "main" java.lang.IllegalStateException: pool',
        None,
        "illegalstateexception",
        "illegalstateexception: pool",
    ),
    ("json.decoder.JSONDecodeError: bad", None, "jsondecodeerror", "jsondecodeerror: bad"),
    (
        "AssertionError [ERR_ASSERTION]: Expected",
        None,
        "assertionerror",
        "assertionerror [err_assertion]: expected",
    ),
    ("Uncaught TypeError: x is undefined", None, "typeerror", "typeerror: x is undefined"),
    ("bash: line 1: pytestx: command not found", None, None, "pytestx: command not found"),
    ("goleak: found unexpected goroutines:", None, None, "goleak: found unexpected goroutines:"),
    ("Error: could not load cache", None, None, "error: could not load cache"),
    ("tests/test_a.py::test_b - AssertionErro...", "tests/test_a.py::test_b", None, "assertionerro"),
]


@pytest.mark.parametrize(("signature", "test", "kind", "core"), PARTS)
def test_error_parts(signature: str, test: str | None, kind: str | None, core: str) -> None:
    parts = error_parts(signature)
    assert (parts.test, parts.kind, parts.core) == (test, kind, core)


SAME = [
    (
        "tests/test_net.py::test_connect - RuntimeError: could not connect",
        "RuntimeError: could not connect",
        True,
    ),
    (
        "tests/test_net.py::test_connect - RuntimeError: could not connect",
        "E   RuntimeError: could not connect",
        True,
    ),
    (
        "tests/test_net.py::test_connect - RuntimeError: could not connect",
        "FAILED tests/test_net.py::test_connect",
        True,
    ),
    (
        "t.py::test_add - assert -# == #",
        "t.py::test_sub - assert -# == #",
        False,
    ),  # a generic text, two tests
    ("t.py::test_a - KeyError: 'a'", "t.py::test_a - KeyError: 'b'", False),
    ("RuntimeError: could not connect", "ConnectionError: could not connect", False),
    ("RuntimeError: could not connect", "RuntimeError: could not resolve", False),
    ("--- FAIL: TestAdd", "--- FAIL: TestAdd (0.01s)", True),
    ("--- FAIL: TestAdd", "--- FAIL: TestAddMore (0.01s)", False),
    ("FAIL: test_add (test_calc.AddTests.test_add)", "ERROR: test_add (test_calc.AddTests)", True),
    (
        "thread 'tests::adds' panicked at src/lib.rs: assertion `left == right` failed",
        "thread 'tests::adds' (18180) panicked at src/lib.rs:11:9:",
        True,
    ),
    (
        "thread 'tests::adds' panicked at src/lib.rs: assertion `left == right` failed",
        "thread 'tests::subs' panicked at src/lib.rs: assertion `left == right` failed",
        False,
    ),
    ("panic: assignment to entry in nil map [recovered]", "panic: assignment to entry in nil map", True),
    ("error TS2345: Argument", "src/a.tsx(42,18): error TS2345: Argument", True),
    ("./calc.go: undefined: c", "/tmp/x/calc.go:4:13: undefined: c", True),
    # pytest cut the summary line: a prefix long enough matches, one that keeps only the type does not
    (
        "t.py::test_a - AttributeError: 'list' object has no at...",
        "AttributeError: 'list' object has no attribute",
        True,
    ),
    ("t.py::test_a - AttributeError: '...", "AttributeError: 'list' object has no attribute", False),
    ("t.py::test_a - AttributeError: '...", "FAILED t.py::test_a - AttributeError: 'list' object", True),
    ("", "", False),
]


@pytest.mark.parametrize(("a", "b", "same"), SAME)
def test_same_error(a: str, b: str, same: bool) -> None:
    assert same_error(error_parts(a), error_parts(b)) is same
    assert same_error(error_parts(b), error_parts(a)) is same


@given(st.text(max_size=60), st.text(max_size=60))
def test_same_error_is_symmetric(a: str, b: str) -> None:
    assert same_error(error_parts(a), error_parts(b)) == same_error(error_parts(b), error_parts(a))


# (runner fixture, the line an agent reading that output would pass, the error type of the stored match)
RUNNER_QUERIES = [
    ("pytest-chained", "FAILED test_net.py::test_connect - RuntimeError: could not connect", "runtimeerror"),
    ("pytest-chained", "E           RuntimeError: could not connect", "runtimeerror"),
    ("pytest-chained", "RuntimeError: could not connect", "runtimeerror"),
    ("pytest-chained", "ValueError: timeout after 30 seconds", "valueerror"),
    ("pytest-fail", "FAILED test_calc.py::test_add - assert -1 == 5", None),
    ("pytest-q-fail", "FAILED test_calc.py::test_timeout", None),
    (
        "pytest-collect-error",
        "E   ModuleNotFoundError: No module named 'missing_module'",
        "modulenotfounderror",
    ),
    ("unittest-fail", "FAIL: test_neg (test_calc.AddTests.test_neg)", None),
    ("unittest-fail", "AssertionError: -1 != 5", "assertionerror"),
    ("unittest-error", "ERROR: test_key (test_broken.Broken.test_key)", None),
    (
        "python-traceback",
        "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
        "jsondecodeerror",
    ),
    ("go-test-fail", "--- FAIL: TestAdd (0.00s)", None),
    ("go-test-fail", "    calc_test.go:7: Add(2, 3) = -1, want 5", None),
    ("go-test-fail", "panic: assignment to entry in nil map", "panic"),
    ("go-test-v-fail", "--- FAIL: TestPanics (0.00s)", None),
    ("go-build-error", "./calc.go:4:13: undefined: c", None),
    ("jest-fail", "  ● add › adds negatives", None),
    ("vitest-fail", "AssertionError: expected -1 to be 5 // Object.is equality", "assertionerror"),
    (
        "mocha-fail",
        "      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
        "assertionerror",
    ),
    ("node-typeerror", "TypeError: Cannot read properties of undefined (reading 'name')", "typeerror"),
    ("cargo-test-fail", "thread 'tests::adds' (18180) panicked at src/lib.rs:11:9:", "panic"),
    ("cargo-test-compile-error", "error[E0308]: mismatched types", "e0308"),
    (
        "tsc-error",
        "greet.ts(5,7): error TS2345: Argument of type 'number' is not assignable to parameter of "
        "type 'string'.",
        "ts2345",
    ),
    (
        "maven-fail",
        "org.opentest4j.AssertionFailedError: expected: <5> but was: <-1>",
        "assertionfailederror",
    ),
    ("maven-fail", "[ERROR]   CalcTest.adds:9 expected: <5> but was: <-1>", None),
    (
        "java-exception",
        'Exception in thread "main" java.lang.IllegalStateException: pool exhausted after 30 attempts',
        "illegalstateexception",
    ),
    ("gcc-error", "main.c:2:13: error: ‘undefined_name’ undeclared (first use in this function)", None),
    # ``command not found`` is the environment's, not the fix's: extraction stores no signature for it
    # (issue #16), so no agent line can meet one; store/errorsig still normalizes it (test above).
]


@pytest.mark.parametrize(("fixture", "agent_line", "kind"), RUNNER_QUERIES)
def test_an_agent_line_meets_what_extraction_stored(fixture: str, agent_line: str, kind: str | None) -> None:
    stored = collect_errors([runner_event(fixture)], "/work/proj", Limits())
    query = error_parts(agent_line)
    matches = [s for s in stored if same_error(query, error_parts(s))]
    assert matches, f"{agent_line!r} meets none of {stored}"
    assert error_parts(matches[0]).kind == kind
    rows = ErrorIndex([(0, ["KeyError: 'unrelated'"]), (1, stored)]).same(query)
    assert rows == {1}


def test_another_test_of_the_same_run_is_not_the_same_error() -> None:
    stored = collect_errors([runner_event("pytest-fail")], "/work/proj", Limits())
    index = ErrorIndex([(0, stored[:1]), (1, stored[1:])])  # test_add, test_timeout
    assert index.same(error_parts("FAILED test_calc.py::test_timeout - assert 0 == 2")) == {1}


# --- the signals of a view --------------------------------------------------------------------------

_POOL = "RuntimeError: pool exhausted"
VIEW_ENTRIES = [
    make_entry(1, "connect retries", files=["src/net.py"],
               errors=["tests/test_net.py::test_connect - RuntimeError: could not connect"]),
    make_entry(2, "pool size", files=["src/db/pool.py", "src/net.py"], errors=[_POOL]),
    make_entry(3, "parser", files=["lib/parser.py"], errors=["--- FAIL: TestParse"]),
    make_entry(4, "docs", files=["README.md"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("errors", "signal"),
    [
        (["RuntimeError: could not connect"], [1.0, "type", 0.0, 0.0]),
        (
            ["FAILED tests/test_net.py::test_connect - RuntimeError: could not connect"],
            [1.0, "type", 0.0, 0.0],
        ),
        (["/ws/tests/test_net.py::test_connect - RuntimeError: could not connect"], [1.0, "type", 0.0, 0.0]),
        (["RuntimeError: something else"], ["type", "type", 0.0, 0.0]),
        (["--- FAIL: TestParse (0.02s)"], [0.0, 0.0, 1.0, 0.0]),
        (["KeyError: 'x'", _POOL], ["type", 1.0, 0.0, 0.0]),
        (["tests/test_net.py::test_other - RuntimeError: could not connect"], ["type", "type", 0.0, 0.0]),
        ([], [0.0, 0.0, 0.0, 0.0]),
        (["   "], [0.0, 0.0, 0.0, 0.0]),
    ],
)
def test_error_signal(errors: list[str], signal: list[float | str]) -> None:
    view = ProjectView(VIEW_ENTRIES)
    share = DEFAULT_WEIGHTS.error_type
    expected = [share if value == "type" else value for value in signal]
    got = view.error_signal(errors, DEFAULT_WEIGHTS, workspace="/ws")
    assert got.tolist() == pytest.approx(expected)


@pytest.mark.parametrize(
    ("files", "workspace", "signal"),
    [
        (["src/net.py"], None, [1.0, 1.0, 0.0, 0.0]),
        (["./src/db/pool.py"], None, [0.0, 1.0, 0.0, 0.0]),
        (["/ws/src/net.py", "/ws/lib/parser.py"], "/ws", [0.5, 0.5, 0.5, 0.0]),
        (["src/nothing.py"], None, [0.0, 0.0, 0.0, 0.0]),
        ([], None, [0.0, 0.0, 0.0, 0.0]),
    ],
)
def test_file_signal(files: list[str], workspace: str | None, signal: list[float]) -> None:
    assert ProjectView(VIEW_ENTRIES).file_signal(files, workspace).tolist() == pytest.approx(signal)


def test_the_error_decides_between_two_fixes_of_the_same_words(store_dir: FixStore) -> None:
    """Same words, different errors: only the error signal can put the older fix of the error asked first."""
    older = make_entry(
        1,
        "cache eviction test fails",
        files=["src/cache.py"],
        ts=1000,
        errors=["tests/test_cache.py::test_evict - KeyError: 'user' not in 'profile'"],
    )
    newer = make_entry(
        2,
        "cache eviction test fails",
        files=["src/store.py"],
        ts=2000,
        errors=["tests/test_cache.py::test_evict - KeyError: 'profile' not in 'user'"],
    )
    store_dir.append(OWNER, PROJECT, [older, newer])
    assert not store_dir.read(OWNER, PROJECT).entries[1].supersedes  # both live
    for error in ("KeyError: 'user' not in 'profile'", "E       KeyError: 'user' not in 'profile'"):
        hits = store_dir.recall(OWNER, PROJECT, "cache eviction test fails", errors=[error], now=3000)
        assert [h.entry.id for h in hits] == [older.id, newer.id], error
        assert hits[0].score > hits[1].score


def test_the_file_decides_between_two_fixes_of_the_same_task(store_dir: FixStore) -> None:
    """Same task: only the file signal can put the older fix of the file asked first."""
    older = make_entry(1, "integration tests fail in CI", files=["src/net.py"], ts=1000)
    newer = make_entry(2, "integration tests fail in CI", files=["src/db/pool.py"], ts=2000)
    store_dir.append(OWNER, PROJECT, [older, newer])
    hits = store_dir.recall(OWNER, PROJECT, "integration tests fail in CI", files=["src/net.py"], now=3000)
    assert [h.entry.id for h in hits] == [older.id, newer.id]
    assert hits[0].score > hits[1].score


@pytest.fixture
def store_dir(data_dir: object) -> FixStore:
    return fix_store(data_dir)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("signature", "words"),
    [
        ("E       KeyError: 'currency_code'", ": 'currency_code'"),
        ("FAILED tests/test_io.py::test_out - AttributeError: 'x'", "tests/test_io.py::test_out - : 'x'"),
        ("pydantic_core._pydantic_core.ValidationError: 2 errors for A", ": 2 errors for A"),
        ("panic: close of closed channel", ": close of closed channel"),
        ("missing go.sum entry for module", "missing go.sum entry for module"),
    ],
)
def test_error_words_drop_the_runner_prefix_and_the_type(signature: str, words: str) -> None:
    assert error_words(signature).split() == words.split()


@pytest.mark.parametrize(
    ("a", "b", "overlapping"),
    [
        ("KeyError: 'JPY'", "t.py::test_fmt - KeyError: 'JPY'", True),  # the same error
        (
            "missing go.sum entry for module providing package x/kafka-go (imported by x/ingestd)",
            "missing go.sum entry for module providing package x/kafka-go",
            True,  # cut without a mark, at a word boundary
        ),
        ("missing go.sum entry for modules", "missing go.sum entry for module", False),  # mid-word
        (
            "AttributeError: 'NoneType' object has no attribute 'write'",
            "AttributeError: 'list' object",
            False,
        ),
        (
            "panic: runtime error: slice bounds out of range",
            "panic: runtime error: index out of range",
            False,
        ),
        ("KeyError: 'currency_code'", "TypeError: 'currency_code'", False),  # another type
        ("a.py::test_a - KeyError: 'abcdefghij' x", "b.py::test_b - KeyError: 'abcdefghij'", False),
        ("KeyError: 'id' in row", "KeyError: 'id'", False),  # too little message to match by a cut
    ],
)
def test_overlapping_errors(a: str, b: str, overlapping: bool) -> None:
    assert overlapping_errors(error_parts(a), error_parts(b)) is overlapping
    assert overlapping_errors(error_parts(b), error_parts(a)) is overlapping
    assert ErrorIndex([(0, [b])]).overlapping(error_parts(a)) == ({0} if overlapping else set())


ATTRIBUTE_ENTRIES = [
    make_entry(1, "cmd_add crashes when given several files",
               errors=["tests/test_commands.py::test_cmd_add - "
                       "AttributeError: 'list' object has no attribute 'split'"],
               solution="split each file name before adding it"),
    make_entry(2, "the exporter writes no header row", errors=["AssertionError: assert 'id' in ''"],
               solution="write the header before the rows"),
    make_entry(3, "dark mode toggle does not persist", solution="store the theme in localStorage"),
]  # fmt: skip
OTHER_ATTRIBUTE_ERROR = (
    "FAILED tests/test_io.py::test_pretty_output - AttributeError: 'NoneType' object has no attribute 'write'"
)
SAME_ATTRIBUTE_ERROR = (
    "FAILED tests/test_commands.py::test_cmd_add - AttributeError: 'list' object has no attribute 'split'"
)


def _signals(query: str, errors: list[str]) -> Signals:
    view = ProjectView(ATTRIBUTE_ENTRIES)
    terms = query_terms(query, errors)
    return view.signals(terms, files=[], errors=errors, workspace=None, weights=DEFAULT_WEIGHTS)


def test_another_error_of_the_same_type_lends_the_entry_no_words() -> None:
    """``object has no attribute`` is AttributeError's wording, not the bug: when the error signal finds
    the errors different, the words the entry states only in its errors get no credit, and the cosine
    is the query text's alone."""
    other = _signals("fix the failing test", [OTHER_ATTRIBUTE_ERROR])
    assert other.errors[0] == pytest.approx(DEFAULT_WEIGHTS.error_type)
    assert other.coverage[0] < 0.1  # only the text's ``test`` meets the entry's test id
    text_only = dot_rows(
        ProjectView(ATTRIBUTE_ENTRIES).vectors, query_terms("fix the failing test", []).vector
    )
    assert other.cosine[0] == pytest.approx(text_only[0])
    same = _signals("fix the failing test", [SAME_ATTRIBUTE_ERROR])
    assert same.errors[0] == 1.0
    assert same.coverage[0] > 0.3 and same.cosine[0] > other.cosine[0] + 0.2


def test_error_words_the_entry_states_outside_its_errors_still_count() -> None:
    """``write`` is in entry 2's task and solution: a query error saying it still meets them."""
    signals = _signals("fix the failing test", [OTHER_ATTRIBUTE_ERROR])
    assert signals.coverage[1] > 0.0
    assert signals.coverage[2] == 0.0


def test_another_error_of_the_same_type_recalls_nothing(store_dir: FixStore) -> None:
    """A probe carrying an error the project never had (same type, other message and test) abstains;
    the error the project had finds its fix. The first failed before phase 3 of the recall eval."""
    store_dir.append(OWNER, PROJECT, ATTRIBUTE_ENTRIES)
    assert (
        store_dir.recall(OWNER, PROJECT, "fix the failing test", errors=[OTHER_ATTRIBUTE_ERROR], now=3000)
        == []
    )
    hits = store_dir.recall(OWNER, PROJECT, "fix the failing test", errors=[SAME_ATTRIBUTE_ERROR], now=3000)
    assert [h.entry.id for h in hits] == [ATTRIBUTE_ENTRIES[0].id]
