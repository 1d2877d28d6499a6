"""The solution text: chatter is filtered, the agent's explanation is kept (pure)."""

from __future__ import annotations

import pytest

from store.entry import TestRun
from workers.extraction.solution import explanation, is_chatter, sentences, solution_text


@pytest.mark.parametrize(
    "sentence",
    [
        "THOUGHT: I'm now ready to submit.",
        "Calling `submit` to submit.",
        "I will now run the tests again to verify the fix.",
        "Let's check the output of the reproduction script.",
        "THOUGHT: All tests passed.",
        "The script ran successfully and the output was `8.2`.",
        "Great!",
        "Does `IrreducibleUnit` have `__eq__`?",
        "Here's the code change:",
        "pytest tests/test_commands.py",
        "Let's remove the reproduce.py file since it is no longer needed.",
        "To implement this feature, we need to modify the `aider/io.py` file.",
    ],
)
def test_chatter(sentence: str) -> None:
    assert is_chatter(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The lookahead `(?=-?\\d+:-?\\d+)` allows optional negative signs, which was the issue.",
        'I added `newline=""` to `EncodedFile` in `FDCaptureBinary.__init__`.',
        "Let's add the missing colon to fix the syntax error.",
        "The current implementation uses integer division, which truncates the decimal part.",
        "I will update the test to pass a string instead of a list.",
    ],
)
def test_explaining_sentences_are_kept(sentence: str) -> None:
    assert not is_chatter(sentence)


def test_the_explanation_skips_chatter_and_looks_back_at_most_three_texts() -> None:
    texts = [
        "The cache key ignored the locale, so two languages shared one entry.",
        "I changed `cache_key` to include the locale.",
        "Let me run the tests.",
        "THOUGHT: All tests passed. I'm ready to submit.",
    ]
    assert explanation(texts) == "I changed `cache_key` to include the locale."
    assert explanation(texts[2:]) == ""
    assert explanation(["Only chatter.", *texts[2:]]) == ""


def test_list_items_and_markers() -> None:
    text = "THOUGHT: I have:\n1. Fixed the parser.\n- Ran the tests."
    assert sentences(text) == ["I have:", "Fixed the parser.", "Ran the tests."]
    assert sentences(text, list_items=False) == ["I have:"]


def test_solution_has_no_chatter_tail() -> None:
    tests = TestRun(command="pytest", ok=True, summary="3 passed")
    assert (
        solution_text(["a/x.py"], tests, ["THOUGHT: I'm now ready to submit."], 240)
        == "changed x.py; tests: 3 passed"
    )
