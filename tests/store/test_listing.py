"""The entries table: filters from a query string, matching, paging (``store.listing``)."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.listing import PER_PAGE, EntryFilter, page_number, paginate, table
from tests.fixmem.ui.conftest import make_entry


def _entries() -> list:
    return [
        make_entry("a", "p", 1, "Parser drops the LAST column", outcome="fixed"),
        make_entry("a", "p", 2, "csv export", outcome="partial", files=["src/export/csv.py"]),
        make_entry("a", "p", 3, "rename loader", outcome="unverified", errors=["KeyError: 'sep'"]),
    ]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, [3, 2, 1]),
        ({"outcome": "partial"}, [2]),
        ({"file": "EXPORT/csv"}, [2]),
        ({"error": "keyerror"}, [3]),
        ({"q": "last column"}, [1]),
        ({"q": "mod3"}, [3]),  # files and symbols too
        ({"since": "2025-10-11"}, [3, 2]),  # T0 + 2 days is 2025-10-11
        ({"until": "2025-10-10"}, [1]),  # the whole day is included
        ({"since": "2025-10-11", "until": "2025-10-11"}, [2]),
        ({"outcome": "fixed", "q": "csv"}, []),
    ],
)
def test_filters(params: dict[str, str], expected: list[int]) -> None:
    wanted, problems = EntryFilter.parse(params)
    assert problems == []
    assert [int(e.event_id.split("-")[1]) for e in table(_entries(), wanted)] == expected


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"outcome": "great"}, "outcome: one of fixed, partial, unverified"),
        ({"since": "13/10/2025"}, "since: expected a day as YYYY-MM-DD"),
        ({"q": "x" * 600}, "q: cut to 500 characters"),
    ],
)
def test_bad_filter_values_are_ignored_with_a_reason(params: dict[str, str], problem: str) -> None:
    wanted, problems = EntryFilter.parse(params)
    assert problems == [problem]
    assert len(table(_entries(), wanted)) == (0 if "q" in params else 3)


def test_a_filter_round_trips_through_its_query_parameters() -> None:
    wanted, _ = EntryFilter.parse({"outcome": "fixed", "file": "a.py", "since": "2025-01-02", "q": "x"})
    assert EntryFilter.parse(wanted.params())[0] == wanted
    assert wanted.since == date(2025, 1, 2) and wanted.active and not EntryFilter().active


@given(st.integers(0, 400), st.integers(-5, 20))
def test_pages_cover_every_item_once(n: int, number: int) -> None:
    items = list(range(n))
    page = paginate(items, number)
    assert 1 <= page.number <= page.pages and page.total == n
    assert [x for p in range(1, page.pages + 1) for x in paginate(items, p).items] == items
    assert len(page.items) <= PER_PAGE


@pytest.mark.parametrize(("raw", "number"), [(None, 1), ("", 1), ("3", 3), ("-2", 1), ("x", 1)])
def test_page_number(raw: str | None, number: int) -> None:
    assert page_number(raw) == number
