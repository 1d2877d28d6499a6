"""Code-aware query understanding (store.recall.code): tables of what a text names, and properties of
recall over long texts (pure tables; the properties use a real store in a temporary directory)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import FixEntry, FixStore, TestRun, entry_id, fit_query
from store.recall.code import code_terms, entry_keys, is_identifier, path_keys, symbol_keys


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("FieldSelection", True),  # PascalCase with an inner capital
        ("getUserById", True),  # camelCase
        ("run_target", True),  # snake_case
        ("MAX_RETRIES", True),
        ("__init__", False),  # a dunder is one plain word inside its underscores
        ("$scope", True),
        ("HTTPServer", True),
        ("linker", False),  # a plain word
        ("Linker", False),
        ("URL", False),
        ("_private", False),
    ],
)
def test_identifier_shapes(word: str, expected: bool) -> None:
    assert is_identifier(word) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "gopls/internal/golang/stubmethods",
            {"p:gopls", "p:internal", "p:golang", "p:stubmethods", "p:gopls/internal", "p:internal/golang",
             "p:golang/stubmethods"},
        ),
        (
            "packages/angular/build/src/tools/oxc-linker.ts",
            {"p:packages", "p:angular", "p:build", "p:src", "p:tools", "p:oxc-linker", "p:oxc", "p:linker",
             "p:packages/angular", "p:angular/build", "p:build/src", "p:src/tools", "p:tools/oxc-linker"},
        ),
        ("@angular/build", {"p:angular", "p:build", "p:angular/build"}),
        ("crates/uv-cli/src/lib.rs", {"p:crates", "p:uv-cli", "p:uv", "p:cli", "p:src", "p:lib",
                                      "p:crates/uv-cli", "p:uv-cli/src", "p:src/lib"}),
        ("", set()),
        ("./", set()),
    ],
)  # fmt: skip
def test_path_keys(path: str, expected: set[str]) -> None:
    assert set(path_keys(path)) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("FieldSelection", {"s:fieldselection"}),
        ("Application.remote", {"s:application.remote", "s:application", "s:remote"}),
        ("cache.Package", {"s:cache.package", "s:cache", "s:package"}),
        ("createRequire()", {"s:createrequire"}),
        ("`run_target`", {"s:run_target"}),
        ("fn", set()),  # too short to tell anything
    ],
)
def test_symbol_keys(name: str, expected: set[str]) -> None:
    assert set(symbol_keys(name)) == expected


@pytest.mark.parametrize(
    ("text", "paths", "symbols", "words"),
    [
        (
            "gopls/internal/golang/stubmethods: support generic interfaces",
            {"p:golang/stubmethods", "p:stubmethods"},
            set(),
            {"p:support", "p:generic", "p:interfaces"},
        ),
        ("fix(@angular/build): scope `createRequire` resolution", {"p:angular/build"}, {"s:createrequire"},
         set()),
        ("Rename FieldSelection to ImplicitFieldSelections", {"p:fieldselection"},
         {"s:fieldselection", "s:implicitfieldselections"}, {"p:rename"}),
        ("add CompiledAsmFiles in cache.Package", {"p:cache/package"},
         {"s:compiledasmfiles", "s:cache.package"}, set()),
        ('Traceback (most recent call last):\n  File "mypy/checker.py", line 120, in check_call\n',
         {"p:mypy/checker", "p:checker"}, {"s:check_call"}, set()),
        ("see crates/uv-cli/src/lib.rs and mypy.checker", {"p:uv-cli", "p:mypy/checker"}, set(), set()),
        ("it crashes when the button is pressed", set(), set(), {"p:crashes", "p:button", "p:pressed"}),
    ],
)  # fmt: skip
def test_code_terms_table(text: str, paths: set[str], symbols: set[str], words: set[str]) -> None:
    """What a text names: at least these keys (a text gives more: every segment and part)."""
    terms = code_terms(text)
    assert paths <= terms.paths, terms.paths
    assert symbols <= terms.symbols, terms.symbols
    assert words <= terms.words, terms.words
    assert not terms.words & terms.paths  # a word found as a name is a name


def test_entry_keys_of_files_and_symbols() -> None:
    keys = entry_keys(["gopls/internal/cmd/remote.go"], ["Application.remote", "pkg/x.go::TestDispatch"])
    assert {"p:cmd", "p:internal/cmd", "p:remote", "s:application.remote", "s:testdispatch"} <= keys


def test_fit_query_keeps_the_head_and_the_code_lines() -> None:
    assert fit_query("short", 100) == "short"
    prose = "a sentence of prose that says little. " * 100
    text = (
        "title: the parser drops commas\n"
        + prose
        + '\n  File "src/csv_io.py", line 3, in parse_csv\n'
        + prose
    )
    fitted = fit_query(text, 1000)
    assert len(fitted) <= 1000
    assert fitted.startswith("title: the parser drops commas")
    assert 'File "src/csv_io.py", line 3, in parse_csv' in fitted


# --- properties over a real store --------------------------------------------------------------------

OWNER, PROJECT, NOW = "alice", "github.com/acme/tools", 1_800_000_000.0
TASKS = [
    ("gopls/internal/golang/stubmethods: fix internal error (missing type) in fromReturnStmt",
     ["gopls/internal/golang/stubmethods/stubmethods.go"], ["fromReturnStmt"]),
    ("go/analysis/passes/modernize: embedlit unnests composite literals",
     ["go/analysis/passes/modernize/embedlit.go"], ["embedlitUnnest"]),
    ("gopls/internal/cmd: group remote connection flags on Application",
     ["gopls/internal/cmd/cmd.go", "gopls/internal/cmd/remote.go"], ["Application", "remote"]),
    ("internal/typeinternal: skip final leaf field in FieldSelection",
     ["internal/typesinternal/fieldselection.go"], ["FieldSelection"]),
    ("gopls/doc: document the change signature refactoring", ["gopls/doc/features/transformation.md"], []),
    ("refactor/satisfy: use NormalTerms, not CoreType", ["refactor/satisfy/find.go"], ["Finder.assign"]),
]  # fmt: skip


def _entries() -> list[FixEntry]:
    return [
        FixEntry(
            id=entry_id(OWNER, PROJECT, f"ev-{i}"),
            ts=NOW - 1000 + i,
            project=PROJECT,
            task=task,
            files=files,
            symbols=symbols,
            errors=[],
            tests=TestRun(command="go test ./...", ok=True),
            outcome="fixed",
            solution="changed " + ", ".join(Path(f).name for f in files),
            tags=["go"],
        )
        for i, (task, files, symbols) in enumerate(TASKS)
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> FixStore:
    fixes = FixStore(tmp_path_factory.mktemp("code-terms"), cap=500)
    fixes.append(OWNER, PROJECT, _entries())
    return fixes


# Boilerplate an issue template adds: words the project never saw, then words it saw everywhere.
BOILERPLATE = [
    "Thanks for reporting! Please describe expected behaviour, actual behaviour and environment.",
    "What version are you running? Does this issue reproduce with the latest release?",
    "Output of go env, operating system and processor architecture attached below for reference.",
]


@settings(max_examples=25, deadline=None)
@given(parts=st.lists(st.sampled_from(BOILERPLATE), min_size=1, max_size=3))
def test_boilerplate_does_not_push_a_closely_related_fix_below_the_floor(
    store: FixStore, parts: list[str]
) -> None:
    """A task naming the component and the function finds that fix closely related; an issue template's
    boilerplate around it (up to three paragraphs) keeps it recalled."""
    task = "gopls/internal/golang/stubmethods: fromReturnStmt returns an internal error for generic types"
    target = entry_id(OWNER, PROJECT, "ev-0")
    alone = store.recall(OWNER, PROJECT, task, now=NOW)
    assert alone[0].entry.id == target
    assert alone[0].tier == "closely related"
    assert "fromReturnStmt" in alone[0].reasons.symbols
    padded = store.recall(OWNER, PROJECT, task + "\n\n" + "\n\n".join(parts), now=NOW)
    assert padded and padded[0].entry.id == target


@settings(max_examples=25, deadline=None)
@given(
    text=st.sampled_from([
        "[mypyc] Make list get/set item more memory safe on free-threaded builds",
        "fix(@angular/ssr): correct grammar in console warning about hydration",
        "Upgrade Hawk to 0.1.13 and pin the Python interpreter in the docker image",
        "write a haiku about the sea",
    ]),
    repeat=st.integers(1, 20),
)  # fmt: skip
def test_an_off_topic_text_of_any_length_returns_nothing(store: FixStore, text: str, repeat: int) -> None:
    assert store.recall(OWNER, PROJECT, "\n".join([text] * repeat), now=NOW) == []
