"""Recall with localized files (issue 32): a real store on real files, the task localized in its checkout."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from store import DEFAULT_WEIGHTS, FixStore
from store.localize import CheckoutIndex, Localized, SourceFacts, localize
from tests.configs import fix_store
from tests.store.factories import OWNER, PROJECT, make_entry

NOW = 1_800_000_000.0
QUERY = "a settings value is wrong after reading"
# explicit knobs, so that these tests do not move when the tuned defaults do
WEIGHTS = replace(
    DEFAULT_WEIGHTS,
    localized_files=6.0,
    localized_min_weight=0.5,
    localized_trust=0.8,
    localized_untouched=3.0,
    localized_unsure=1.0,
)
LOADER = "src/config/loader.py"


@pytest.fixture
def store(data_dir: Path) -> FixStore:
    store = fix_store(data_dir)
    store.append(
        OWNER,
        PROJECT,
        [
            make_entry(1, "Nested quotes in a settings value are cut at the first quote", files=[LOADER]),
            make_entry(
                2, "Session cookie is not refreshed after the token expires", files=["src/auth/session.py"]
            ),
            make_entry(
                3, "Settings page shows garbage for a value with a BOM", files=["src/config/encoding.py"]
            ),
            make_entry(4, "Export to CSV drops the header row", files=["src/export/csv.py"]),
            make_entry(5, "Upload of large files times out behind the proxy", files=["src/upload/chunks.py"]),
            make_entry(6, "Dark mode colors are wrong on the settings page", files=["web/theme.css"]),
        ],
    )
    return store


def files_of(store: FixStore, **kwargs: object) -> list[str]:
    return [r.entry.files[0] for r in store.recall(OWNER, PROJECT, QUERY, now=NOW, weights=WEIGHTS, **kwargs)]  # type: ignore[arg-type]


def test_a_localized_file_brings_its_fix_with_the_reason(store: FixStore) -> None:
    assert LOADER not in files_of(store)  # the text alone does not find it
    why = "the task names `read_value`, defined here"
    got = store.recall(
        OWNER, PROJECT, QUERY, now=NOW, weights=WEIGHTS, localized=[Localized(LOADER, 0.9, why)]
    )
    assert [r.entry.files[0] for r in got] == [LOADER]  # trusted: fixes elsewhere must be close on their own
    assert got[0].reasons.localized == f"touched {LOADER}, where the task was localized: {why}"
    assert why in got[0].reasons.summary()
    assert got[0].to_dict()["reasons"]["localized"] == got[0].reasons.localized


def test_an_unsure_localization_does_not_override_the_text(store: FixStore) -> None:
    text_only = files_of(store)
    assert text_only
    # under ``localized_min_weight`` a file is ignored: workspace mode with nothing localized
    assert files_of(store, localized=[Localized(LOADER, 0.3, "a weak clue")]) == files_of(store, localized=[])
    assert files_of(store, localized=[]) == text_only  # ``localized_unsure`` 1: the text floor
    # under ``localized_trust`` it adds evidence but closes no door
    middling = files_of(store, localized=[Localized(LOADER, 0.6, "a clue")])
    assert LOADER in middling
    assert set(text_only) <= set(middling)


def test_workspace_mode_that_localized_nothing_asks_more_of_the_text(store: FixStore) -> None:
    strict = replace(WEIGHTS, localized_unsure=2.0)
    got = store.recall(OWNER, PROJECT, QUERY, now=NOW, weights=strict, localized=[])
    assert files_of(store) and got == []
    text_only = store.recall(OWNER, PROJECT, QUERY, now=NOW, weights=strict)  # no checkout: text only
    assert [r.entry.files[0] for r in text_only] == files_of(store)


def test_known_files_keep_their_weight(store: FixStore) -> None:
    known = files_of(store, files=["src/config/encoding.py"])
    both = files_of(
        store, files=["src/config/encoding.py"], localized=[Localized("src/config/encoding.py", 0.6, "x")]
    )
    assert both == known


def test_localize_then_recall_end_to_end(store: FixStore) -> None:
    facts = {
        LOADER: SourceFacts(defs=("read_value", "Loader.read_value")),
        "src/auth/session.py": SourceFacts(),
    }
    index = CheckoutIndex.build([*facts, "README.md"], facts)
    text = QUERY + "\n\n`Loader.read_value` returns the value cut at the first quote"
    located = localize(text, index)
    assert located[0].path == LOADER
    got = store.recall(OWNER, PROJECT, text, now=NOW, localized=located)
    assert got[0].entry.files == [LOADER]
    assert "Loader.read_value" in (got[0].reasons.localized or "")
