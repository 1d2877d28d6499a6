"""The parse cache's bound: a running total of its items' sizes, equal to their sum, under the bound."""

from __future__ import annotations

from pathlib import Path

from store import FixStore
from tests.store.factories import OWNER, make_entry


def _sizes(store: FixStore) -> int:
    return sum(c.view.memory_bytes() for c in store._cache.values())


def test_the_running_total_is_the_sum_of_the_items_and_keeps_the_bound(data_dir: Path) -> None:
    store = FixStore(data_dir, cap=50, cache_bytes=200_000)
    for n in range(12):
        project = f"/home/alice/app{n}"
        store.append(OWNER, project, [make_entry(n, f"task {n}", project=project)])
        assert store._cache_total == _sizes(store) <= 200_000
    assert 1 < len(store._cache) < 12  # the least recently used projects were evicted


def test_a_view_that_grew_after_it_was_remembered_is_counted_again(data_dir: Path) -> None:
    store = FixStore(data_dir, cap=50)
    project = "/home/alice/app"
    store.append(OWNER, project, [make_entry(n, f"task {n}", project=project) for n in range(3)])
    fresh = FixStore(data_dir, cap=50)  # a reader: its views compute their vectors lazily, after
    fresh.recall(OWNER, project, "task 1")
    fresh.recall(OWNER, project, "task 2")  # remembered again: its size is taken again
    assert fresh._cache_total == _sizes(fresh) > 0
