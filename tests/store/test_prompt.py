"""The prompt block: format, budget (never exceeded), staleness marks, ages (pure, plus file checks)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.recall.prompt import (
    HEADER,
    PromptItem,
    estimate_tokens,
    format_age,
    prompt_block,
    render,
    render_line,
)
from store.recall.search import Recalled
from store.staleness import commit_gone, stale_marks
from tests.store.factories import make_entry

NOW = 1_700_000_000.0 + 3 * 86400


def test_empty_input_gives_an_empty_block() -> None:
    assert prompt_block([], now=NOW) == ""


def test_block_lists_outcome_task_files_error_solution_and_age() -> None:
    entry = make_entry(
        0,
        "fix login timeout",
        files=["src/auth.py", "src/session.py"],
        errors=["TimeoutError: login took # s", "second error"],
        solution="raised the session timeout",
    )
    block = prompt_block([entry], now=NOW)
    assert block == (
        "Past fixes in this project:\n"
        "- [fixed] fix login timeout | files: src/auth.py, src/session.py"
        " | error: TimeoutError: login took # s | solution: raised the session timeout | 3d ago"
    )


def test_regressed_fixes_say_so() -> None:
    entry = make_entry(0, "fix login timeout")
    block = prompt_block([Recalled(entry, 0.9, regressed=True, regressed_by=make_entry(1).id)], now=NOW)
    assert "[fixed, regressed later]" in block


def test_many_files_are_summarized_and_text_is_one_line() -> None:
    entry = make_entry(0, "fix\nthe   parser", files=[f"f{i}.py" for i in range(5)], solution="a\nb")
    line = render_line(PromptItem(entry), NOW)
    assert "\n" not in line
    assert "files: f0.py, f1.py, f2.py (+2 more)" in line
    assert "fix the parser" in line and "solution: a b" in line


def test_secrets_are_redacted_in_the_block() -> None:
    entry = make_entry(0, "rotate key", solution="set password=hunter2hunter2 in config")
    block = prompt_block([entry], now=NOW)
    assert "hunter2" not in block and "[REDACTED]" in block


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "just now"),
        (59, "just now"),
        (60, "1m ago"),
        (3599, "59m ago"),
        (3600, "1h ago"),
        (86400 * 2 + 5, "2d ago"),
        (86400 * 59, "59d ago"),
        (86400 * 60, "2mo ago"),
        (86400 * 800, "2y ago"),
    ],
)
def test_format_age(seconds: float, text: str) -> None:
    assert format_age(seconds) == text


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("abc", 1), ("abcd", 2), ("a" * 300, 100), ("日本", 2), ("é", 1)],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


long_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(long_text, long_text, long_text), min_size=1, max_size=8),
    st.integers(min_value=0, max_value=400),
)
def test_block_never_exceeds_the_budget(rows: list[tuple[str, str, str]], budget: int) -> None:
    entries = [
        make_entry(i, task, errors=[error] if error else [], solution=solution)
        for i, (task, error, solution) in enumerate(rows)
    ]
    block = prompt_block(entries, budget, now=NOW)
    assert estimate_tokens(block) <= budget
    if block:
        assert block.startswith(HEADER + "\n- [")
    elif budget >= 200:  # the first entry is shortened rather than dropped when the header fits
        pytest.fail("a budget of 200 tokens must hold the header and one (shortened) entry")


def test_entries_that_do_not_fit_are_left_out_most_relevant_kept() -> None:
    entries = [make_entry(i, f"task number {i}", solution="x" * 200) for i in range(10)]
    block = render([PromptItem(e) for e in entries], 150, now=NOW)
    assert "task number 0" in block and "task number 9" not in block
    assert estimate_tokens(block) <= 150


def test_a_budget_with_room_for_only_a_stub_gives_nothing() -> None:
    # Found by Hypothesis: budget 11 left room for "- …" alone, a line that says nothing.
    assert prompt_block([make_entry(0, "")], budget_tokens=11, now=NOW) == ""
    assert prompt_block([make_entry(0, "x" * 500)], budget_tokens=11, now=NOW) == ""


def test_a_budget_too_small_for_the_header_gives_nothing() -> None:
    assert prompt_block([make_entry(0)], budget_tokens=5, now=NOW) == ""


@pytest.mark.parametrize(
    ("commit", "known", "gone"),
    [
        (None, {"abc1234"}, False),  # nothing to check
        ("abc1234", None, False),  # nothing was checked
        ("abc1234", set(), False),  # an empty set means nothing was checked
        ("abc1234", {"abc1234"}, False),
        ("abc1234", {"abc1234" + "0" * 33}, False),  # short sha, full sha known
        ("abc1234" + "0" * 33, {"abc1234"}, False),  # full sha, short known
        ("abc1234", {"def5678"}, True),
    ],
)
def test_commit_gone(commit: str | None, known: set[str] | None, gone: bool) -> None:
    assert commit_gone(commit, known) is gone


def test_stale_marks_and_block(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kept.py").write_text("")
    gone_file = make_entry(0, "old fix", files=["src/removed.py"], commit="aaaaaaa")
    kept = make_entry(1, "live fix", files=["src/kept.py"], commit="bbbbbbb")
    assert stale_marks(gone_file, known_commits={"bbbbbbb"}, file_exists=lambda f: f == "src/kept.py") == (
        "stale: commit gone",
        "stale: file gone: src/removed.py",
    )
    block = prompt_block([gone_file, kept], known_commits={"bbbbbbb"}, workspace=str(tmp_path), now=NOW)
    first, second = block.splitlines()[1:]
    assert first.endswith("(stale: commit gone) (stale: file gone: src/removed.py)")  # marked, not dropped
    assert "stale" not in second
    assert "stale" not in prompt_block([gone_file], now=NOW)  # nothing checked: nothing marked


def test_prompt_block_refuses_other_values() -> None:
    with pytest.raises(TypeError, match="Recalled or FixEntry"):
        prompt_block(["not an entry"], now=NOW)  # type: ignore[arg-type]


CHANGES = [
    "separable.py · _cstack: cright[...] = 1 → cright[...] = right",
    "separable.py · _cdot: + return np.dot(left, right)",
    "core.py · Unit.__eq__: + except (ValueError, TypeError):",
    "test_separable.py: + assert_allclose(result, expected)",
]


def test_a_closely_related_fix_shows_up_to_three_change_lines_under_it() -> None:
    entry = make_entry(0, "fix nested compound models", files=["separable.py"], changes=CHANGES)
    block = render([PromptItem(entry)], 600, now=NOW)
    lines = block.split("\n")
    assert lines[1].startswith("- [fixed] fix nested compound models")
    assert lines[2:] == [f"  change: {c}" for c in CHANGES[:3]]


def test_a_possibly_related_fix_shows_its_first_change_on_its_line() -> None:
    entry = make_entry(0, "fix nested compound models", files=["separable.py"], changes=CHANGES)
    block = render([PromptItem(entry, close=False)], 600, now=NOW)
    assert block.split("\n")[2] == (
        f"- [fixed] fix nested compound models | files: separable.py | change: {CHANGES[0]} | 3d ago"
    )


def test_change_lines_are_dropped_before_the_entry_when_the_budget_is_tight() -> None:
    first = make_entry(0, "first fix", changes=CHANGES)
    second = make_entry(1, "second fix", changes=CHANGES)
    full = render([PromptItem(first)], 600, now=NOW)
    budget = estimate_tokens(full) + 30  # room for the first with all its lines and a bare second one
    block = render([PromptItem(first), PromptItem(second)], budget, now=NOW)
    assert estimate_tokens(block) <= budget
    assert block.startswith(full)
    assert "second fix" in block and block.count("  change: ") < 6


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(long_text, st.lists(long_text, max_size=5), st.booleans()), min_size=1, max_size=6),
    st.integers(min_value=0, max_value=400),
)
def test_block_with_changes_never_exceeds_the_budget(
    rows: list[tuple[str, list[str], bool]], budget: int
) -> None:
    items = [
        PromptItem(make_entry(i, task, changes=changes or None), close=close)
        for i, (task, changes, close) in enumerate(rows)
    ]
    block = render(items, budget, now=NOW)
    assert estimate_tokens(block) <= budget
