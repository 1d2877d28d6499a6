"""Localization: facts per language, the checkout index and its JSON, resolving task texts to files."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.localize import CheckoutIndex, Localized, SourceFacts, facts, localize
from store.localize.resolve import LocalizeWeights, component, resolve_path

PYTHON = '''
import os

MAX_RETRIES = 3


class TypeChecker(NodeVisitor[None]):
    """Mypy type checker."""

    def check_call_expr(self, e: CallExpr) -> Type:
        if e.callee is None:
            raise TypeError("Cannot determine type of %s in this context" % e)
        return AnyType()

    async def visit_block(self, b):
        pass


def git_revision(path: str) -> bytes:
    return b"unknown: failed to read the git revision"
'''

TYPESCRIPT = """
import { logging } from '@angular-devkit/core';

export class BuildRunner {
  private readonly cache = new Map<string, string>();

  async runTarget(target: string): Promise<void> {
    if (!this.cache.has(target)) {
      throw new Error(`Cannot find target ${target} in the workspace configuration.`);
    }
  }
}

export function createBuilder(options: Schema) {}
export const normalizeOptions = (o: Schema) => o;
export interface Schema { outputPath: string }
export type Target = string;
"""

GO = """package cache

type (
	Package struct{ id string }
	handle  int
)

const MaxFileSize = 10 << 20

func (s *Snapshot) PackageForFile(ctx context.Context, uri string) (*Package, error) {
	return nil, fmt.Errorf("no package metadata for file %s", uri)
}

func NewView[T any](x T) {}
"""

RUST = """
pub struct Resolver<'a> {
    index: &'a Index,
}

impl<'a> Resolver<'a> {
    pub fn resolve_requirements(&self) -> Result<()> {
        bail!("Failed to resolve requirements from `{}`", self.path);
    }
}

impl fmt::Display for Resolver<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }
}

pub(crate) enum Mode { Lowest, Highest }

pub trait Source {
    fn fetch(&self);
}

const DEFAULT_INDEX_URL: &str = "https://pypi.org/simple";
"""

SOURCES = {
    "mypy/checker.py": PYTHON,
    "packages/angular/build/src/runner.ts": TYPESCRIPT,
    "gopls/internal/cache/snapshot.go": GO,
    "crates/uv-resolver/src/resolver.rs": RUST,
}


@pytest.fixture
def index() -> CheckoutIndex:
    files = [*SOURCES, "README.md", "docs/checker.md", "mypy/test/checker.py"]
    return CheckoutIndex.build(files, {path: facts(path, text) for path, text in SOURCES.items()})


@pytest.mark.parametrize(
    ("path", "defined", "held"),
    [
        (
            "mypy/checker.py",
            {
                "TypeChecker",
                "check_call_expr",
                "TypeChecker.check_call_expr",
                "visit_block",
                "TypeChecker.visit_block",
                "git_revision",
                "MAX_RETRIES",
            },
            {"cannot determine type of", "unknown failed to read the git revision"},
        ),
        (
            "packages/angular/build/src/runner.ts",
            {
                "BuildRunner",
                "runTarget",
                "BuildRunner.runTarget",
                "createBuilder",
                "normalizeOptions",
                "Schema",
                "Target",
            },
            {"cannot find target", "in the workspace configuration"},
        ),
        (
            "gopls/internal/cache/snapshot.go",
            {"Package", "handle", "MaxFileSize", "PackageForFile", "Snapshot.PackageForFile", "NewView"},
            {"no package metadata for file"},
        ),
        (
            "crates/uv-resolver/src/resolver.rs",
            {
                "Resolver",
                "resolve_requirements",
                "Resolver.resolve_requirements",
                "fmt",
                "Resolver.fmt",
                "Mode",
                "Source",
                "fetch",
                "Source.fetch",
                "DEFAULT_INDEX_URL",
            },
            {"failed to resolve requirements from"},
        ),
    ],
)
def test_facts_per_language(path: str, defined: set[str], held: set[str]) -> None:
    found = facts(path, SOURCES[path])
    assert defined <= set(found.defs)
    assert held <= set(found.strings)


def test_facts_keep_methods_out_of_later_top_level_names() -> None:
    found = facts("mypy/checker.py", PYTHON)
    assert "TypeChecker.git_revision" not in found.defs
    assert "Resolver.DEFAULT_INDEX_URL" not in facts("x.rs", RUST).defs
    assert "Source.DEFAULT_INDEX_URL" not in facts("x.rs", RUST).defs


def test_facts_of_other_files_are_empty() -> None:
    assert facts("README.md", "# `git_revision` fails with a long message here") == SourceFacts()
    assert facts("Makefile", "all:\n\techo 'this is a long enough string'") == SourceFacts()


def test_short_and_one_word_strings_are_not_kept() -> None:
    found = facts("a.py", 'x = "short one"\ny = "averyveryverylongword"\nz = "two words that matter"\n')
    assert found.strings == ("two words that matter",)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (
            'Traceback (most recent call last):\n  File "/home/u/src/mypy/checker.py", line 12, in f\n',
            "mypy/checker.py",
        ),
        ("panic: nil map\n\ngopls/internal/cache/snapshot.go:42 +0x1f", "gopls/internal/cache/snapshot.go"),
        (
            "thread 'main' panicked at crates/uv-resolver/src/resolver.rs:3:5:",
            "crates/uv-resolver/src/resolver.rs",
        ),
        (
            "Error: boom\n    at runTarget (packages/angular/build/src/runner.ts:10:7)",
            "packages/angular/build/src/runner.ts",
        ),
    ],
)
def test_traceback_frames_point_at_the_file(text: str, path: str, index: CheckoutIndex) -> None:
    found = localize(text, index)
    assert found[0].path == path
    assert found[0].weight >= 0.9
    assert "traceback" in found[0].why


@pytest.mark.parametrize(
    ("text", "path", "why"),
    [
        (
            "Crash in `TypeChecker.check_call_expr` on overloads",
            "mypy/checker.py",
            "TypeChecker.check_call_expr",
        ),
        ("git_revision() raises on a shallow clone", "mypy/checker.py", "git_revision"),
        (
            "PackageForFile returns nil for a file outside the view",
            "gopls/internal/cache/snapshot.go",
            "PackageForFile",
        ),
        (
            "uv says: error: Failed to resolve requirements from `pyproject.toml`",
            "crates/uv-resolver/src/resolver.rs",
            "failed to resolve requirements from",
        ),
        ("the module mypy.checker is slow on big unions", "mypy/checker.py", "mypy.checker"),
        ("`cache.Package` has no id", "gopls/internal/cache/snapshot.go", "cache.Package"),
        (
            "see crates/uv-resolver/src/resolver.rs for the fork logic",
            "crates/uv-resolver/src/resolver.rs",
            "resolver.rs",
        ),
    ],
)
def test_names_paths_and_messages_resolve(text: str, path: str, why: str, index: CheckoutIndex) -> None:
    found = localize(text, index)
    assert found, text
    assert found[0].path == path
    assert why in found[0].why
    assert 0 < found[0].weight <= 1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Improve the wording of the documentation about installing on Windows.",
        "`Widget.render` crashes",  # names nothing the checkout defines
    ],
)
def test_abstains_when_nothing_resolves(text: str, index: CheckoutIndex) -> None:
    assert localize(text, index) == ()


def test_a_file_name_held_twice_is_split() -> None:
    files = ["a/checker.py", "b/checker.py"]
    index = CheckoutIndex.build(files, {})
    assert resolve_path("checker.py", index) == tuple(files)
    assert resolve_path("b/checker.py", index) == ("b/checker.py",)
    assert localize("see checker.py", index) == ()  # 0.7 / 2 is under the floor
    low = localize("see checker.py", index, weights=LocalizeWeights(min_weight=0.1))
    assert {loc.path for loc in low} == set(files)
    assert all(loc.weight == pytest.approx(0.35) for loc in low)


def test_rare_names_count_more_than_common_ones() -> None:
    common = {f"pkg/m{i}.py": SourceFacts(defs=("run",)) for i in range(3)}
    rare = {"pkg/rare.py": SourceFacts(defs=("resolve_lock",))}
    index = CheckoutIndex.build([*common, *rare], {**common, **rare})
    weights = LocalizeWeights(min_weight=0.01)
    found = {
        loc.path: loc.weight for loc in localize("`run` fails inside `resolve_lock`", index, weights=weights)
    }
    assert found["pkg/rare.py"] > 2 * found["pkg/m0.py"]
    many = {f"pkg/n{i}.py": SourceFacts(defs=("setup",)) for i in range(10)}
    crowded = CheckoutIndex.build(list(many), many)
    assert localize("`setup()` breaks", crowded, weights=weights) == ()


def test_the_history_prior_favours_the_files_past_fixes_touched() -> None:
    files = ["a/checker.py", "b/checker.py"]
    index = CheckoutIndex.build(files, {})
    touched = {"b/checker.py"}
    assert localize("see checker.py", index, touched=touched) == localize("see checker.py", index)  # share 1
    half = LocalizeWeights(untouched=0.5, min_weight=0.1)
    found = {loc.path: loc.weight for loc in localize("see checker.py", index, weights=half, touched=touched)}
    assert found == {
        "b/checker.py": pytest.approx(0.7 / 1.5, abs=1e-4),
        "a/checker.py": pytest.approx(0.35 / 1.5, abs=1e-4),
    }
    none = LocalizeWeights(untouched=0.0)
    only = localize("see checker.py", index, weights=none, touched=touched)
    assert [(loc.path, loc.weight) for loc in only] == [("b/checker.py", pytest.approx(0.7))]


def test_the_history_prior_keeps_a_common_name_among_the_files_fixes_touched() -> None:
    many = {f"pkg/n{i}.py": SourceFacts(defs=("setup_cache",)) for i in range(10)}
    index = CheckoutIndex.build(list(many), many)
    weights = LocalizeWeights(min_weight=0.01)
    assert localize("`setup_cache()` breaks", index, weights=weights) == ()  # 10 files: dropped
    found = localize("`setup_cache()` breaks", index, weights=weights, touched={"pkg/n3.py", "pkg/n7.py"})
    assert {loc.path for loc in found} == {"pkg/n3.py", "pkg/n7.py"}
    assert all(loc.weight == pytest.approx(0.6 / 10, abs=1e-4) for loc in found)  # still one of ten files
    crowded = {f"pkg/n{i}.py" for i in range(6)}  # more touched files than max_files: still dropped
    assert localize("`setup_cache()` breaks", index, weights=weights, touched=crowded) == ()


def test_more_clues_raise_the_weight(index: CheckoutIndex) -> None:
    one = localize("PackageForFile is slow", index)[0]
    two = localize("PackageForFile is slow: no package metadata for file x.go", index)[0]
    assert two.path == one.path
    assert two.weight > one.weight
    assert "more clue" in two.why


def test_limit_caps_the_answer(index: CheckoutIndex) -> None:
    text = "`TypeChecker` `BuildRunner` `PackageForFile` `resolve_requirements`"
    assert len(localize(text, index)) == 4
    assert len(localize(text, index, limit=2)) == 2
    assert all(isinstance(loc, Localized) for loc in localize(text, index))


def test_index_json_round_trip(index: CheckoutIndex) -> None:
    again = CheckoutIndex.from_json(index.to_json())
    assert again == index
    assert again.by_basename == index.by_basename
    assert localize("git_revision() fails", again) == localize("git_revision() fails", index)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"version": 2, "files": [], "defs": {}, "strings": {}},
        {"version": 1, "files": "a.py", "defs": {}, "strings": {}},
        {"version": 1, "files": ["a.py"], "defs": {"f": [3]}, "strings": {}},
        {"version": 1, "files": ["a.py"], "defs": {"f": ["a.py"]}, "strings": {}},
        {"version": 1, "files": ["a.py"], "defs": [], "strings": {}},
        {"version": 1, "files": ["a.py"], "defs": {}, "strings": {"oneword": [0]}},
    ],
)
def test_from_json_rejects_bad_shapes(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="checkout index"):
        CheckoutIndex.from_json(data)


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}(\.[A-Za-z_][A-Za-z0-9_]{0,8})?", fullmatch=True)
_LITERAL = st.lists(st.from_regex(r"[a-z0-9_]{1,8}", fullmatch=True), min_size=2, max_size=5).map(" ".join)
_PATH = st.from_regex(r"[a-z]{1,6}(/[a-z_]{1,6}){0,3}\.(py|go|rs|ts|md)", fullmatch=True)


@given(
    files=st.lists(_PATH, min_size=1, max_size=8, unique=True),
    picks=st.lists(st.tuples(st.integers(0, 7), _NAME, _LITERAL), max_size=20),
)
def test_index_json_round_trip_property(files: list[str], picks: list[tuple[int, str, str]]) -> None:
    by_path: dict[str, tuple[list[str], list[str]]] = {path: ([], []) for path in files}
    for at, name, literal in picks:
        defs, strings = by_path[files[at % len(files)]]
        defs.append(name)
        strings.append(literal)
    index = CheckoutIndex.build(
        files, {p: SourceFacts(defs=tuple(d), strings=tuple(s)) for p, (d, s) in by_path.items()}
    )
    again = CheckoutIndex.from_json(index.to_json())
    assert again == index
    assert again.string_keys == index.string_keys
    for _, name, _ in picks:
        assert set(again.defs[name]) <= set(files)


COMPONENT_FILES = [
    "gopls/internal/golang/rename.go",
    "gopls/internal/golang/hover.go",
    "gopls/internal/cache/rename.go",
    "go/analysis/passes/modernize/stringsseq.go",
    "packages/angular/build/src/utils/hash.ts",
    "packages/angular/cli/src/utils/hash.ts",
    "mypyc/irbuild/vec.py",
    "docs/rename.md",
]


@pytest.mark.parametrize(
    ("title", "dirs"),
    [
        ("gopls/internal/golang: fix rename of fields", ("gopls/internal/golang",)),
        ("fix(@angular/build): hash once per locale", ("packages/angular/build",)),
        ("[mypyc] Add vec extend", ("mypyc",)),
        (
            "go/analysis/passes/modernize, gopls/internal/cache: x",
            ("go/analysis/passes/modernize", "gopls/internal/cache"),
        ),
        ("Fix: something unrelated", ()),
        ("Improve rename", ()),
    ],
)
def test_the_title_names_a_component(title: str, dirs: tuple[str, ...]) -> None:
    index = CheckoutIndex.build(COMPONENT_FILES, {})
    assert component(title + "\n\nbody", index) == dirs


def test_a_title_word_names_a_file_of_its_component() -> None:
    index = CheckoutIndex.build(COMPONENT_FILES, {})
    found = localize("gopls/internal/golang: normalize fields before rename\n\nLong body.", index)
    assert [loc.path for loc in found] == ["gopls/internal/golang/rename.go"]
    assert "component" in found[0].why
    assert localize("go/analysis/passes/modernize: fix stringsseq panic", index)[0].path.endswith(
        "stringsseq.go"
    )
    # without a component, a plain word is no file name; a code-shaped or hyphenated one is
    assert localize("Improve rename of fields", index) == ()


def test_the_component_narrows_a_common_name_and_discounts_the_rest() -> None:
    files = {
        "packages/angular/build/src/utils/hash.ts": SourceFacts(defs=("hashOptions",)),
        "packages/angular/cli/src/utils/hash.ts": SourceFacts(defs=("hashOptions",)),
        "packages/angular/cli/src/other.ts": SourceFacts(defs=("createCacheKey",)),
    }
    index = CheckoutIndex.build(list(files), files)
    found = localize("fix(@angular/build): `hashOptions` once per locale", index)
    assert found[0].path == "packages/angular/build/src/utils/hash.ts"
    assert found[0].weight == pytest.approx(0.6)
    assert "component" in found[0].why
    outside = localize(
        "fix(@angular/build): `createCacheKey` is slow", index, weights=LocalizeWeights(min_weight=0)
    )
    assert outside[0].weight == pytest.approx(0.6 * 0.4)


def test_command_line_flags_are_declared_names() -> None:
    main = facts(
        "mypy/main.py", 'parser.add_argument(\n    "--cache-map", nargs="+", dest="special-opts:cache_map")\n'
    )
    assert "--cache-map" in main.defs
    cli = facts(
        "crates/uv-cli/src/lib.rs",
        "pub struct PipArgs {\n    /// Limit candidates.\n    #[arg(long, env = EnvVars::UV_EXCLUDE_NEWER)]\n"
        '    pub exclude_newer: Option<String>,\n    #[arg(long = "no-build")]\n    no_build_flag: bool,\n'
        "    #[arg(short)]\n    pub quiet: bool,\n}\n",
    )
    assert {"--exclude-newer", "--no-build"} <= set(cli.defs)
    assert "--quiet" not in cli.defs
    index = CheckoutIndex.build(["mypy/main.py", "mypy/build.py"], {"mypy/main.py": main})
    assert localize("Support .ff files with --cache-map", index) == ()  # where declared, seldom the fix
    found = localize("Support .ff files with --cache-map", index, weights=LocalizeWeights(min_weight=0.1))
    assert found[0].path == "mypy/main.py"
    assert found[0].weight == pytest.approx(0.3)
    assert "flag `--cache-map`" in found[0].why


def test_a_rust_module_declaration_is_no_definition() -> None:
    found = facts(
        "crates/uv-workspace/src/lib.rs", "pub mod pyproject_mut;\nmod inline {\n    fn x() {}\n}\n"
    )
    assert "pyproject_mut" not in found.defs
    assert {"inline", "x"} <= set(found.defs)


def test_what_the_title_names_counts_more() -> None:
    files = {"src/grammar.py": SourceFacts(defs=("parser",)), "src/tokens.py": SourceFacts(defs=("lexer",))}
    index = CheckoutIndex.build(list(files), files)
    found = localize("Fix a crash in `parser`\n\nThe `lexer` hands it an empty token.", index)
    assert [loc.path for loc in found] == ["src/grammar.py"]
    assert found[0].weight == pytest.approx(1 - 0.7 * 0.7)
    untitled = localize("Fix a crash in `parser`\n\nThe `lexer` hands it an empty token.", index,
                        weights=LocalizeWeights(title=0.0))  # fmt: skip
    assert untitled == ()
