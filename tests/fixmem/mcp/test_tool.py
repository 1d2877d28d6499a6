"""fixmem.mcp.tool: the recall_fixes handler, its schemas (one source for every vendor), auto-recall."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from fixmem.cli import cli
from fixmem.mcp.tool import (
    DISABLED,
    INPUT_SCHEMA,
    NOTHING_RELEVANT,
    ToolArgsError,
    ToolContext,
    auto_recall,
    parse_args,
    recall_fixes,
    tool_schema,
)
from fixmem.settings import Settings
from store import FixEntry, FixStore, TestRun, entry_id
from tests.configs import fix_store

OWNER = "alice"
PROJECT = "github.com/acme/widgets"
NOW = 1_700_100_000.0


def _entry(n: int, task: str, *, files: list[str], error: str, outcome: str = "fixed") -> FixEntry:
    return FixEntry(
        id=entry_id(OWNER, PROJECT, f"ev-{n}"),
        ts=1_700_000_000.0 + n,
        project=PROJECT,
        task=task,
        files=files,
        symbols=[],
        errors=[error],
        tests=None if outcome == "unverified" else TestRun(command="pytest -q", ok=outcome == "fixed"),
        outcome=outcome,  # type: ignore[arg-type]
        solution=f"solution {n}",
        tags=[outcome],
    )


@pytest.fixture
def store(data_dir: Path) -> FixStore:
    store = fix_store(data_dir)
    store.append(OWNER, PROJECT, [
        _entry(1, "parse_csv drops quoted commas", files=["src/csv_io.py"],
               error="AssertionError: assert ['a', '\"b'] == ['a', 'b,c']"),
        _entry(2, "login redirect loops after logout", files=["app/auth/views.py"],
               error="RecursionError: maximum recursion depth exceeded"),
        _entry(3, "bump the numpy pin", files=["pyproject.toml"], error="", outcome="unverified"),
    ])  # fmt: skip
    return store


def _ctx(store: FixStore, workspace: Path | None = None, **overrides: Any) -> ToolContext:
    values: dict[str, Any] = {"workspace": str(workspace) if workspace else None, "clock": lambda: NOW}
    values.update(overrides)
    return ToolContext(store=store, owner=OWNER, project_key=PROJECT, **values)


def test_recall_fixes_finds_the_relevant_fix_and_renders_the_block(store: FixStore) -> None:
    result = recall_fixes(_ctx(store), {"query": "parse_csv splits quoted commas wrong", "k": 2})
    assert result.fixes[0]["entry"]["id"] == entry_id(OWNER, PROJECT, "ev-1")
    assert len(result.fixes) <= 2
    assert result.text == result.prompt_block
    assert result.prompt_block.startswith("Past fixes in this project")
    assert "parse_csv drops quoted commas" in result.text
    assert result.to_json() == {"prompt_block": result.prompt_block, "fixes": result.fixes}


def test_files_and_error_steer_the_recall(store: FixStore) -> None:
    result = recall_fixes(
        _ctx(store),
        {"query": "it crashes", "files": ["app/auth/views.py"], "error": "RecursionError: maximum recursion"},
    )
    assert result.fixes[0]["entry"]["id"] == entry_id(OWNER, PROJECT, "ev-2")


def test_nothing_relevant_says_so(store: FixStore) -> None:
    result = recall_fixes(_ctx(store), {"query": "configure the kubernetes ingress certificate"})
    assert (result.text, result.prompt_block, result.fixes) == (NOTHING_RELEVANT, "", [])


def test_an_unknown_project_and_a_disabled_memory(store: FixStore) -> None:
    other = ToolContext(store=store, owner="bob", project_key=PROJECT)
    assert recall_fixes(other, {"query": "parse_csv drops quoted commas"}).text == NOTHING_RELEVANT
    off = recall_fixes(_ctx(store, enabled=False), {"query": "parse_csv drops quoted commas"})
    assert (off.text, off.fixes) == (DISABLED, [])


def test_the_tool_is_read_only(store: FixStore, data_dir: Path) -> None:
    before = {p: p.read_bytes() for p in data_dir.rglob("*") if p.is_file()}
    for _ in range(3):
        recall_fixes(_ctx(store), {"query": "parse_csv drops quoted commas", "files": ["src/csv_io.py"]})
    after = {p: p.read_bytes() for p in data_dir.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize(
    ("args", "field", "bound"),  # the field and our bound, not pydantic's wording (which changes by release)
    [
        ({}, "query", None),
        ({"query": ""}, "query", "1"),
        ({"query": "x", "k": 0}, "k", "1"),
        ({"query": "x", "k": 51}, "k", "50"),
        ({"query": "x", "k": "3"}, "k", None),
        ({"query": "x", "files": "src/a.py"}, "files", None),
        ({"query": "x", "files": ["a"] * 51}, "files", "50"),
        ({"query": "x", "files": [""]}, "files.0", "1"),
        ({"query": "x", "surprise": 1}, "surprise", None),
    ],
)
def test_bad_arguments_are_refused_with_the_field_and_the_reason(
    args: Any, field: str, bound: str | None
) -> None:
    with pytest.raises(ToolArgsError) as refused:
        parse_args(args)
    assert re.search(rf"(^|\W){re.escape(field)}: \S", str(refused.value)), str(refused.value)
    if bound is not None:
        assert re.search(rf"{re.escape(field)}: [^\n;]*\b{bound}\b", str(refused.value)), str(refused.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [("{not json", "arguments are not valid JSON"), ("[1, 2]", "arguments must be a JSON object")],
)
def test_arguments_that_are_no_json_object_are_refused(args: str, message: str) -> None:
    with pytest.raises(ToolArgsError, match=re.escape(message)):
        parse_args(args)


def test_openai_hands_arguments_as_a_json_string(store: FixStore) -> None:
    as_text = recall_fixes(_ctx(store), json.dumps({"query": "parse_csv drops quoted commas"}))
    assert as_text.fixes[0]["entry"]["id"] == entry_id(OWNER, PROJECT, "ev-1")


_ARGS = st.fixed_dictionaries(
    {},
    optional={
        "query": st.one_of(st.text(max_size=20), st.integers(), st.none()),
        "files": st.one_of(st.lists(st.text(max_size=5), max_size=3), st.text(max_size=3)),
        "error": st.one_of(st.text(max_size=10), st.integers()),
        "k": st.one_of(st.integers(-3, 60), st.text(max_size=2), st.booleans()),
        "extra": st.integers(),
    },
)


@settings(max_examples=300)
@given(_ARGS)
def test_the_model_accepts_exactly_what_the_json_schema_accepts(args: dict[str, Any]) -> None:
    schema_ok = jsonschema.Draft202012Validator(INPUT_SCHEMA).is_valid(args)
    try:
        parse_args(args)
        model_ok = True
    except ToolArgsError:
        model_ok = False
    assert model_ok == schema_ok, args


def test_one_schema_in_three_formats() -> None:
    openai, anthropic, mcp = tool_schema("openai"), tool_schema("anthropic"), tool_schema("mcp")
    assert openai["type"] == "function"
    assert openai["function"]["name"] == anthropic["name"] == mcp["name"] == "recall_fixes"
    assert openai["function"]["parameters"] == anthropic["input_schema"] == mcp["inputSchema"] == INPUT_SCHEMA
    assert mcp["annotations"]["readOnlyHint"] is True
    jsonschema.Draft202012Validator.check_schema(INPUT_SCHEMA)
    with pytest.raises(ValueError, match="unknown tool schema format"):
        tool_schema("gemini")  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "mcp"])
def test_tool_schema_command_prints_the_definition(fmt: str) -> None:
    result = CliRunner().invoke(cli, ["tool-schema", "--format", fmt])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == tool_schema(fmt)  # type: ignore[arg-type]


def test_auto_recall_puts_notes_first_then_fixes_within_the_budget(store: FixStore, tmp_path: Path) -> None:
    workspace = tmp_path / "widgets"
    (workspace / ".fixmem").mkdir(parents=True)
    (workspace / ".fixmem" / "memory.md").write_text(
        "## gotcha: the csv fixtures are generated\nRun make fixtures after editing csv_io.\n"
    )
    ctx = _ctx(store, workspace)
    block = auto_recall(ctx, "parse_csv drops quoted commas again", files=["src/csv_io.py"])
    assert block.index("the csv fixtures are generated") < block.index("Past fixes in this project")
    assert "parse_csv drops quoted commas" in block
    small = auto_recall(_ctx(store, workspace, budget_tokens=50), "parse_csv drops quoted commas again")
    assert len(small) < len(block)
    assert len(small) <= 50 * 4 + 40  # the store's estimate: ~4 bytes a token (one clipped line may pass)


def test_auto_recall_honours_the_switches(store: FixStore, tmp_path: Path) -> None:
    message = "parse_csv drops quoted commas again"
    assert auto_recall(_ctx(store, auto_recall=False), message) == ""
    assert auto_recall(_ctx(store, enabled=False), message) == ""
    assert auto_recall(_ctx(store), "configure the kubernetes ingress certificate") == ""
    assert auto_recall(_ctx(store), "   ") == ""


def test_context_from_settings_takes_budget_and_switches(store: FixStore) -> None:
    settings = Settings.from_env(
        {"FIXMEM_FIX_MEMORY_AUTO_RECALL": "false", "FIXMEM_FIX_MEMORY_PROMPT_BUDGET_TOKENS": "120"}
    )
    ctx = ToolContext.from_settings(settings, store, owner=OWNER, project_key=PROJECT, workspace=None)
    assert (ctx.auto_recall, ctx.budget_tokens, ctx.enabled) == (False, 120, True)
    assert auto_recall(ctx, "parse_csv drops quoted commas") == ""
