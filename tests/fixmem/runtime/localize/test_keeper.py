"""The indexes kept warm: built by a real child process, never waited for, failures not retried in a loop."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixmem.runtime.localize import checkout as ck
from fixmem.runtime.localize.keeper import (
    MAX_ROOTS,
    REFRESH_SECONDS,
    Keeper,
    failed_recently,
    localize_now,
    spawn_build,
)
from tests.fixmem.runtime.localize.checkout_repo import commit_all, make_checkout
from tests.polling import wait_for

DEADLINE_SECONDS = 60.0
TASK = "apply_discount raises ValueError: quantity must be positive"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_checkout(tmp_path / "widgets")


def warm(keeper: Keeper, cwd: str) -> None:
    wait_for(lambda: keeper.index_for(cwd) is not None, DEADLINE_SECONDS, "the index built in a child")


def test_cold_answers_nothing_at_once_then_the_child_builds_it(repo: Path, tmp_path: Path) -> None:
    spawned: list[ck.Checkout] = []

    def spawn(cache: str, checkout: ck.Checkout) -> subprocess.Popen[bytes]:
        spawned.append(checkout)
        return spawn_build(cache, checkout)

    keeper = Keeper(str(tmp_path / "cache"), spawn=spawn)
    assert keeper.localized(str(repo), TASK) is None  # cold: text only, nothing waited for
    warm(keeper, str(repo / "web"))
    assert len(spawned) == 1  # one build per checkout, however often it was asked
    got = keeper.localized(str(repo), TASK)
    assert got and got[0].path == "invoicer/totals.py" and "apply_discount" in got[0].why
    assert keeper.localized(str(tmp_path), TASK) is None  # not a checkout: text only
    assert keeper.localized(str(repo), "the weather is nice") == ()  # localized, to nowhere


def test_a_new_head_answers_with_the_old_index_until_its_own_is_built(repo: Path, tmp_path: Path) -> None:
    keeper = Keeper(str(tmp_path / "cache"))
    warm(keeper, str(repo))
    (repo / "web/extra.ts").write_text("export function newWidget() {}\n")
    commit_all(repo)
    assert keeper.index_for(str(repo)) is not None  # the old HEAD's meanwhile
    wait_for(
        lambda: "newWidget" in getattr(keeper.index_for(str(repo)), "defs", {}),
        DEADLINE_SECONDS,
        "the new HEAD's index",
    )


def test_a_failed_build_is_logged_once_and_not_retried_in_a_loop(repo: Path, tmp_path: Path) -> None:
    cache, failures, spawned = str(tmp_path / "cache"), [], []

    def failing(cache: str, checkout: ck.Checkout) -> subprocess.Popen[bytes]:
        spawned.append(checkout)
        code = "import sys; sys.stderr.write('index of x: OSError: disk full\\n'); sys.exit(1)"
        with open(Path(ck.root_dir(cache, checkout.root), "build.log"), "ab") as log:
            return subprocess.Popen([sys.executable, "-c", code], stderr=log)

    Path(ck.root_dir(cache, str(repo))).mkdir(parents=True)  # where the log goes
    keeper = Keeper(cache, on_failure=failures.append, spawn=failing)
    assert keeper.index_for(str(repo)) is None
    wait_for(lambda: keeper.index_for(str(repo)) is None and failures, DEADLINE_SECONDS, "the failure")
    for _ in range(5):
        assert keeper.index_for(str(repo)) is None
    assert len(spawned) == 1 and len(failures) == 1 and "disk full" in failures[0]
    found = ck.checkout_of(str(repo))
    assert found is not None and failed_recently(cache, found, now=time.time())
    again = Keeper(cache, spawn=failing)  # a restarted daemon does not try again at once either
    assert again.index_for(str(repo)) is None and len(spawned) == 1


def test_a_corrupt_cached_index_is_rebuilt_not_crashed_on(repo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    found = ck.checkout_of(str(repo))
    assert found is not None
    ck.build(cache, found)
    Path(ck.index_path(cache, found)).write_bytes(b"\x00garbage")
    keeper = Keeper(cache)
    warm(keeper, str(repo))
    assert ck.load_index(cache, found) is not None  # written again


def test_a_short_lived_client_localizes_from_the_cache_or_builds_for_next_time(
    repo: Path, tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")
    assert localize_now(cache, str(repo), TASK) is None  # cold: a detached build started
    wait_for(lambda: localize_now(cache, str(repo), TASK), DEADLINE_SECONDS, "the detached build's index")
    assert localize_now(cache, str(repo), TASK)[0].path == "invoicer/totals.py"
    assert localize_now(cache, str(repo), "   ") == ()


def test_a_keeper_lets_go_of_the_least_recently_used_checkout(tmp_path: Path) -> None:
    keeper = Keeper(str(tmp_path / "cache"))
    repos = [make_checkout(tmp_path / f"r{i}") for i in range(MAX_ROOTS + 1)]
    for repo in repos[:MAX_ROOTS]:
        warm(keeper, str(repo))
    keeper.index_for(str(repos[0]))  # used again: the second is now the oldest
    warm(keeper, str(repos[MAX_ROOTS]))
    kept = set(keeper._roots)
    assert len(kept) == MAX_ROOTS and str(repos[1]) not in kept and str(repos[0]) in kept
    warm(keeper, str(repos[1]))  # back from its cache


def test_a_refresh_that_finds_nothing_changed_keeps_the_loaded_index(repo: Path, tmp_path: Path) -> None:
    late = [0.0]
    keeper = Keeper(str(tmp_path / "cache"), clock=lambda: time.time() + late[0])
    warm(keeper, str(repo))
    loaded = keeper.index_for(str(repo))
    late[0] = REFRESH_SECONDS * 2  # a minute and more later: the next use refreshes it in a child
    keeper.index_for(str(repo))
    slot = keeper._roots[str(repo)]
    assert slot.child is not None  # the refresh runs
    before = slot.loaded_at

    def refreshed() -> bool:
        keeper.poll()  # reaps the child, then looks at the file it only touched
        return slot.loaded_at > before and not slot.loading

    wait_for(refreshed, DEADLINE_SECONDS, "the refresh")
    assert keeper.index_for(str(repo)) is loaded  # the same object: not parsed again
