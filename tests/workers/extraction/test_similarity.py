"""The typed ratios of two strings are difflib's ``SequenceMatcher(None, a, b, autojunk=False)`` ones."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from workers.extraction.similarity import quick_ratio, ratio, real_quick_ratio

# Few distinct characters make many repeats and ties (where the tie-breaking shows); any text, the rest.
texts = st.one_of(st.text(alphabet="ab( )x1.", max_size=40), st.text(max_size=60))


@settings(max_examples=1500, deadline=None)
@given(texts, texts)
def test_the_three_ratios_are_difflibs(a: str, b: str) -> None:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    assert real_quick_ratio(a, b) == matcher.real_quick_ratio()
    assert quick_ratio(a, b) == matcher.quick_ratio()
    assert ratio(a, b) == matcher.ratio()


def test_code_lines_and_empty_strings() -> None:
    pairs = [
        ("return data[38]", "return data.get(38)"),
        ("x = compute(a, b)  # one", "y = compute(b, a)  # two"),
        ("", ""),
        ("", "abc"),
        ("aaaa" * 60, "aaab" * 60),  # long enough for autojunk's popular characters, which stay off here
    ]
    for a, b in pairs:
        assert ratio(a, b) == difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
