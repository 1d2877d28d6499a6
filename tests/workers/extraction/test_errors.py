"""Error signatures: shapes that are errors, shapes that are not, and the documented normalization."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.errorsig import error_type
from workers.extraction import normalize_error
from workers.extraction.errors import _ENVIRONMENT, add_signature, find_errors, is_environment_noise


@pytest.mark.parametrize(
    ("line", "workspace", "expected"),
    [
        ("ValueError: timeout after 30 seconds", None, "ValueError: timeout after # seconds"),
        ("KeyError: 'py311' in sha256 table", None, "KeyError: 'py311' in sha256 table"),
        ("error[E0308]: mismatched types", None, "error[E0308]: mismatched types"),
        ("a.ts(12,5): error TS2345: Argument", None, "a.ts: error TS2345: Argument"),
        ("object at 0x7f3a2b1c4d50 is gone", None, "object at 0x# is gone"),
        ("/home/u/app/src/x.py:12:5: error: bad", "/home/u/app", "src/x.py: error: bad"),
        (
            "/usr/lib/python3.11/json/decoder.py:355: JSONDecodeError",
            "/home/u/app",
            "<path>: JSONDecodeError",
        ),
        ('File "/home/u/app/m.py", line 7, in f', "/home/u/app", 'File "m.py", in f'),
        ("  too    many\t spaces  ", None, "too many spaces"),
        ("\x1b[31mAssertionError\x1b[0m: 1 != 2", None, "AssertionError: # != #"),
        ("took 1.5s and 3,000 ms", None, "took #s and # ms"),
        ("ponyc__0.1/ponyc: not found", None, "ponyc__0.1/ponyc: not found"),
        ("x" * 300, None, "x" * 200),
    ],
)
def test_normalize_error(line: str, workspace: str | None, expected: str) -> None:
    assert normalize_error(line, workspace=workspace) == expected


TRACEBACK = """Traceback (most recent call last):
  File "/app/run.py", line 3, in <module>
    main()
  File "/app/run.py", line 2, in main
    raise KeyError("k")
KeyError: 'k'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/app/run.py", line 5, in <module>
    raise RuntimeError("wrapped")
RuntimeError: wrapped
"""


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (TRACEBACK, ["KeyError: 'k'", "RuntimeError: wrapped"]),
        ("E       AssertionError: boom\nE        + where 1 = f()\n", ["AssertionError: boom"]),
        ("FAILED tests/t.py::test_a - ValueError: x\n", ["tests/t.py::test_a - ValueError: x"]),
        ("FAILED tests/t.py::test_b\n", ["FAILED tests/t.py::test_b"]),
        ("FAIL: test_x (pkg.mod.Case)\n", ["FAIL: test_x (pkg.mod.Case)"]),
        ("TypeError: x is not a function\n    at f (a.js:1:1)\n", ["TypeError: x is not a function"]),
        ("  ● suite › does a thing\n", ["● suite › does a thing"]),
        ("src/a.ts:3:7 - error TS2322: Type 'x' is bad\n", ["error TS2322: Type 'x' is bad"]),
        ("--- FAIL: TestAdd (0.00s)\n", ["--- FAIL: TestAdd"]),
        (
            "panic: runtime error: index out of range [3] with length 3\n",
            ["panic: runtime error: index out of range [3] with length 3"],
        ),
        ("./main.go:12:5: undefined: foo\n", ["./main.go: undefined: foo"]),
        ("error[E0425]: cannot find value `x`\n", ["error[E0425]: cannot find value `x`"]),
        ("thread 'm' panicked at 'boom', src/x.rs:2:5\n", ["thread 'm' panicked at src/x.rs:2:5: boom"]),
        (
            'Exception in thread "main" java.lang.NullPointerException\n',
            ['Exception in thread "main" java.lang.NullPointerException'],
        ),
        ("x.c:3:9: error: expected ';' before '}' token\n", ["x.c: error: expected ';' before '}' token"]),
        ("bash: pytest: command not found\n", ["pytest: command not found"]),
        ("sh: 1: ponyc: not found\n", ["ponyc: command not found"]),
        ("cat: missing.txt: No such file or directory\n", ["cat: missing.txt: No such file or directory"]),
        ("Error: could not load cache\n", ["Error: could not load cache"]),
        # ordinary output that merely mentions errors is not an error
        ("0 errors, 2 warnings\nno error found\nhandle_error() returned\n", []),
        ("    raise ValueError('bad value: 3')\n", []),
        ("log: ValueError handled gracefully\n", []),
        ("", []),
    ],
)
def test_find_errors(output: str, expected: list[str]) -> None:
    assert find_errors(output) == expected


def test_add_signature_dedups_and_prefers_the_longer_form() -> None:
    kept: list[str] = []
    for candidate in ["assert # == #", "t.py::test_a - assert # == #", "assert # == #", "KeyError: 'k'"]:
        add_signature(kept, candidate, limit=10)
    assert kept == ["t.py::test_a - assert # == #", "KeyError: 'k'"]


def test_add_signature_caps() -> None:
    kept: list[str] = []
    for n in range(30):
        add_signature(kept, f"E{n:04d}", limit=10)
    assert len(kept) == 10


@pytest.mark.parametrize(
    ("signature", "kind"),
    [
        ("ValueError: x", "ValueError"),
        ("t.py::test_a - json.decoder.JSONDecodeError: y", "JSONDecodeError"),
        ("error[E0308]: mismatched types", "E0308"),
        ("error TS2345: Argument", "TS2345"),
        ("panic: boom", "panic"),
        ("pytest: command not found", None),
    ],
)
def test_error_type(signature: str, kind: str | None) -> None:
    assert error_type(signature) == kind


# One signature per alternative of the environment pattern (and per branch inside one), in odd casing: the
# ASCII word check in front of the search must let every one of them through to it.
ENVIRONMENT_SIGNATURES = [
    "PYTEST: Command Not Found",
    "make: *** No rule to make target 'test'.  Stop.",
    "make[2]: *** No targets specified and no makefile found.  Stop.",
    "No targets specified and no makefile found",
    "GNUmakefile: No such file or directory",
    "gmake[1]: Makefile: No such file or directory",
    "bash: ./build/ponyc: No such file or directory",
    "/bin/sh: line 1: ./run: No such file or directory",
    "ERROR: Could not find a version that satisfies the requirement foo==9",
    "ERROR: No matching distribution found for foo==9",
    "ERROR: Failed building wheel for lxml",
    "ERROR: Could not build wheels for numpy",
    "error: subprocess-exited-with-error",
    "Failed to build installable wheels for some pyproject.toml based projects",
    "E: Unable to locate package libfoo-dev",
    "E: Could not open lock file /var/lib/dpkg/lock-frontend",
    "E: Package 'python3-foo' has no installation candidate",
    "npm ERR! code E404",
    "NPM err! 404 Not Found",
    "ERROR: Could not install packages due to an OSError",
    "pip._vendor.resolvelib.resolvers.ResolutionImpossible",
    "error: externally-managed-environment",
    "/usr/bin/python3: No module named pip",
    "ſubprocess-exited-with-error",  # not ASCII: case-blind matching folds ſ to s, str.lower does not
]


@pytest.mark.parametrize("signature", ENVIRONMENT_SIGNATURES)
def test_every_environment_alternative_passes_the_word_check(signature: str) -> None:
    assert bool(_ENVIRONMENT.search(signature))
    assert is_environment_noise(signature)


@given(
    st.lists(
        st.sampled_from([*ENVIRONMENT_SIGNATURES, "Error", " ", "\n", ": ", "MAKE", "ſ", "K"])
        | st.text(max_size=12),
        max_size=5,
    ).map("".join)
)
def test_environment_noise_is_the_pattern_search(signature: str) -> None:
    assert is_environment_noise(signature) is bool(_ENVIRONMENT.search(signature))
