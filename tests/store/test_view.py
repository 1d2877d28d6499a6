"""A view made by ``extend`` or ``subset`` carries its ``Derived`` data forward: equal to a fresh view's."""

from __future__ import annotations

import numpy as np
import pytest

from store.entry import FixEntry
from store.recall.view import ProjectView
from tests.store.factories import make_entry

TASKS = ["login times out", "cache returns stale sessions", "parser drops the last row", "upload fails"]


def _entries(start: int, count: int, supersede_every: int = 3) -> list[FixEntry]:
    """Entries ``start…``; every ``supersede_every``-th supersedes the one before it."""
    out: list[FixEntry] = []
    for n in range(start, start + count):
        extra = {"supersedes": out[-1].id} if out and n % supersede_every == 0 else {}
        out.append(
            make_entry(
                n,
                TASKS[n % len(TASKS)] + f" case {n}",
                files=[f"src/m{n % 5}.py"],
                errors=[f"tests/t.py::test_{n} - ValueError: bad {n}"] if n % 2 else [],
                **extra,
            )
        )
    return out


def _computed(view: ProjectView) -> ProjectView:
    """``view`` after reading everything a view carries forward."""
    _ = (view.rows, view.index_pairs, view.file_sets, view.error_only_words, view.live, view.vectors)
    return view


def _assert_same(carried: ProjectView, fresh: ProjectView) -> None:
    assert carried.entries == fresh.entries
    assert carried.keyword_lists == fresh.keyword_lists
    assert carried.index_bytes() == fresh.index_bytes()
    assert carried.file_sets == fresh.file_sets
    assert carried.error_only_words == fresh.error_only_words
    assert carried.rows == fresh.rows
    assert carried.superseded == fresh.superseded
    assert carried.live.tolist() == fresh.live.tolist()
    np.testing.assert_array_equal(carried.vectors, fresh.vectors)


@pytest.mark.parametrize("computed", [True, False])
def test_extend_equals_a_fresh_view(computed: bool) -> None:
    old, new = _entries(0, 12), _entries(12, 7)
    view = _computed(ProjectView(old)) if computed else ProjectView(old)
    _assert_same(view.extend(new), ProjectView([*old, *new]))


def test_extend_of_a_superseding_entry_retires_its_target() -> None:
    old = _entries(0, 4, supersede_every=100)
    new = [make_entry(99, "login times out again", supersedes=old[1].id)]
    grown = _computed(ProjectView(old)).extend(new)
    assert grown.superseded == {old[1].id: new[0].id}
    assert grown.live.tolist() == [True, False, True, True, True]


@pytest.mark.parametrize(
    "rows",
    [
        [0, 2, 3, 5, 6, 8, 9, 10, 11],  # drops entries that supersede nothing and are no target
        [0, 1, 3, 4, 6, 7, 9, 10],  # drops superseded entries: their superseders stay live
        [1, 2, 4, 5],  # drops entry 3, which supersedes 2: supersession is recomputed
        [11, 0, 5],  # out of order
    ],
)
def test_subset_equals_a_fresh_view(rows: list[int]) -> None:
    entries = _entries(0, 12)
    view = _computed(ProjectView(entries))
    _assert_same(view.subset(rows), ProjectView([entries[r] for r in rows]))


def test_memory_bytes_counts_a_carried_vector_buffer() -> None:
    entries = _entries(0, 6)
    grown = _computed(ProjectView(entries[:3])).extend(entries[3:])
    assert grown.memory_bytes() >= grown.vectors.nbytes + 2048 * len(entries)
