"""Export (markdown digest, lossless JSONL) and JSONL import: grouping, problems by line, round trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import FixEntry, FixStore, TestRun, entry_id
from store.persist.export import (
    ImportRefused,
    export_log,
    import_log,
    jsonl_lines,
    markdown_digest,
    parse_jsonl,
)
from tests.configs import fix_store

DAY = 86_400.0
T0 = 1_780_000_000.0  # 2026-05-28 UTC


def entry(n: int, project: str = "web", **fields: Any) -> FixEntry:
    values: dict[str, Any] = {
        "id": entry_id("alice", project, f"turn-{n}"),
        "ts": T0 + n * DAY + 0.125,
        "project": project,
        "task": f"task {n}",
        "files": ["src/login.py"],
        "symbols": [],
        "errors": ["TimeoutError: login timed out after # seconds"],
        "tests": None,
        "outcome": "fixed",
        "solution": f"solution {n}",
        "tags": [],
    }
    values.update(fields)
    return FixEntry.model_validate(values)


# -- markdown --------------------------------------------------------------------------------------


def test_markdown_groups_by_file_then_error_with_outcomes_and_dates() -> None:
    entries = [
        entry(1, files=["src/b.py"], errors=["KeyError: 'user'"], outcome="partial"),
        entry(2, files=["src/a.py", "src/c.py"], errors=["ValueError: bad", "TypeError: x"]),
        entry(3, files=[], errors=[], outcome="unverified", task="tidy up"),
        entry(
            4,
            files=["src/b.py"],
            errors=["KeyError: 'user'"],
            tests=TestRun(command="pytest tests/test_b.py", ok=True, summary="4 passed"),
        ),
        entry(0, files=["src/b.py"], errors=[]),
    ]
    text = markdown_digest(entries, project="web", regressed={}, superseded={entries[1].id: entries[3].id})
    assert text.splitlines() == [
        "# Fix log: web",
        "",
        "5 entries: 3 fixed, 1 partial, 1 unverified; 2026-05-28 to 2026-06-01 (UTC dates).",
        "Grouped by file, then error signature. The lossless form is `fixmem export --format jsonl`.",
        "",
        "## `src/a.py`",
        "",
        "### `ValueError: bad`",
        "",
        f"- 2026-05-30 **fixed** — task 2 (`{entries[1].id}`)",
        "  - solution: solution 2",
        "  - also: `src/c.py`",
        "  - other errors: `TypeError: x`",
        f"  - superseded by `{entries[3].id}`",
        "",
        "## `src/b.py`",
        "",
        "### `KeyError: 'user'`",
        "",
        f"- 2026-05-29 **partial** — task 1 (`{entries[0].id}`)",
        "  - solution: solution 1",
        f"- 2026-06-01 **fixed** — task 4 (`{entries[3].id}`)",
        "  - solution: solution 4",
        "  - tests: `pytest tests/test_b.py` passed — 4 passed",
        "",
        "### (no error signature)",
        "",
        f"- 2026-05-28 **fixed** — task 0 (`{entries[4].id}`)",
        "  - solution: solution 0",
        "",
        "## (no file)",
        "",
        "### (no error signature)",
        "",
        f"- 2026-05-31 **unverified** — tidy up (`{entries[2].id}`)",
        "  - solution: solution 3",
    ]


def test_markdown_marks_regressions_redacts_escapes_and_clips() -> None:
    fixed = entry(1, solution="set password=hunter2hunter2 then <b>retry</b> *twice*", task="t " * 300)
    broke = entry(2, outcome="partial")
    text = markdown_digest([fixed, broke], project="web", regressed={fixed.id: broke.id}, malformed=2)
    assert "hunter2" not in text and "password=[REDACTED]" in text
    assert r"\<b\>retry\</b\> \*twice\*" in text
    assert f"  - **regressed**: `{broke.id}` failed again on 2026-05-30" in text
    assert "2 malformed line(s) of the log are not in this digest." in text
    task_line = next(line for line in text.splitlines() if line.startswith("- 2026-05-29"))
    assert "…" in task_line and len(task_line) < 260


def test_markdown_of_nothing_and_code_spans_with_backticks() -> None:
    assert (
        markdown_digest([], project="web").splitlines()[2] == "0 entries: 0 fixed, 0 partial, 0 unverified."
    )
    text = markdown_digest([entry(1, files=["we`ird.py"])], project="web")
    assert "## ``we`ird.py``" in text


def test_markdown_is_deterministic() -> None:
    entries = [entry(i, files=[f"f{i % 3}.py"]) for i in range(10)]
    assert markdown_digest(entries, project="w") == markdown_digest(list(reversed(entries)), project="w")


# -- JSONL parsing ---------------------------------------------------------------------------------


def _line(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


def test_parse_jsonl_reports_every_bad_line_with_its_number() -> None:
    good = entry(1).model_dump(mode="json")
    other_content = {**good, "task": "different"}
    data = b"".join(
        [
            _line(good),  # 1
            b"\n",  # 2: blank, skipped
            b"{not json\n",  # 3
            _line([1, 2]),  # 4
            _line({**good, "id": "fix-XYZ"}),  # 5
            _line({k: v for k, v in good.items() if k != "outcome"}),  # 6
            _line(entry(2, project="api").model_dump(mode="json")),  # 7
            _line(other_content),  # 8
            _line(good),  # 9: the same line again is fine
        ]
    )
    entries, problems = parse_jsonl(data, project="web")
    assert [e.id for e in entries] == [good["id"]]
    assert [(p.line, p.reason.split(":")[0]) for p in problems] == [
        (3, "not JSON"),
        (4, "not a JSON object but list"),
        (5, "id"),
        (6, "outcome"),
        (7, "entry of project 'api', not 'web'"),
        (8, f"{good['id']} already on line 1 with different content"),
    ]


@st.composite
def entries_with_extras(draw: st.DrawFn) -> FixEntry:
    text = st.text(max_size=40)
    return entry(
        draw(st.integers(0, 10_000)),
        task=draw(text),
        files=draw(st.lists(text, max_size=3)),
        errors=draw(st.lists(text, max_size=2)),
        outcome=draw(st.sampled_from(["fixed", "partial", "unverified"])),
        ts=draw(st.floats(0, 4e9, allow_nan=False)),
        commit=draw(st.none() | st.text("0123456789abcdef", min_size=40, max_size=40)),
        tests=draw(st.none() | st.builds(TestRun, command=text, ok=st.booleans(), summary=text)),
        future_field=draw(st.none() | st.integers(-(2**63), 2**63 - 1) | st.lists(text, max_size=2)),
    )


@given(st.lists(entries_with_extras(), max_size=8, unique_by=lambda e: e.id))
def test_jsonl_lines_read_back_unchanged(entries: list[FixEntry]) -> None:
    parsed, problems = parse_jsonl(b"".join(jsonl_lines(entries)))
    assert problems == []
    assert parsed == entries
    assert [e.model_dump() for e in parsed] == [e.model_dump() for e in entries]  # unknown fields too


# -- round trip through FixStore -------------------------------------------------------------------


def _build_log(store: FixStore) -> list[FixEntry]:
    batches = [
        [
            entry(1, task="fix login timeout", tests=TestRun(command="pytest", ok=True, summary="1 passed")),
            entry(2, files=["src/db.py"], errors=["OperationalError: database is locked"], outcome="partial"),
        ],
        [
            entry(3, task="fix the login timeout bug", commit="a" * 40, extractor="x/1"),  # supersedes 1
            entry(4, files=[], errors=[], outcome="unverified", tags=["chore"], reviewer="bob"),
        ],
        [entry(5, files=["src/db.py"], errors=["OperationalError: database is locked"])],
    ]
    for batch in batches:
        store.append("alice", "web", batch)
    return store.read("alice", "web").entries


def test_export_then_import_equals_the_original_log(tmp_path: Path) -> None:
    original_store = fix_store(tmp_path / "one")
    original = _build_log(original_store)
    assert any(e.supersedes for e in original)  # the log has history worth keeping
    exported = export_log(original_store, "alice", "web", "jsonl")
    assert (exported.entries, exported.malformed) == (5, 0)

    fresh = fix_store(tmp_path / "two")
    result = import_log(fresh, "alice", exported.data)
    assert (result.added, result.already_present, result.dropped, result.changed) == (5, 0, 0, ())
    assert result.projects == ("web",)
    assert fresh.read("alice", "web").entries == original
    assert export_log(fresh, "alice", "web", "jsonl").data == exported.data
    md = export_log(fresh, "alice", "web", "markdown").data
    assert md == export_log(original_store, "alice", "web", "markdown").data


def test_import_is_idempotent_and_keeps_ids(tmp_path: Path) -> None:
    source = fix_store(tmp_path / "one")
    original = _build_log(source)
    data = export_log(source, "alice", "web", "jsonl").data
    target = fix_store(tmp_path / "two")
    import_log(target, "alice", data)
    log_bytes = next((tmp_path / "two").rglob("*.jsonl")).read_bytes()
    again = import_log(target, "alice", data)
    assert (again.added, again.already_present) == (0, 5)
    assert next((tmp_path / "two").rglob("*.jsonl")).read_bytes() == log_bytes
    assert [e.id for e in target.read("alice", "web").entries] == [e.id for e in original]


def test_import_of_an_old_export_does_not_bring_back_what_was_forgotten(tmp_path: Path) -> None:
    store = fix_store(tmp_path / "one")
    original = _build_log(store)
    data = export_log(store, "alice", "web", "jsonl").data  # exported before the forget
    assert store.forget("alice", original[1].id)
    result = import_log(store, "alice", data)
    assert (result.added, result.already_present, result.forgotten) == (0, 4, 1)
    assert original[1].id not in {e.id for e in store.read("alice", "web").entries}


def test_import_into_a_log_that_has_some_of_the_entries(tmp_path: Path) -> None:
    source = fix_store(tmp_path / "one")
    original = _build_log(source)
    target = fix_store(tmp_path / "two")
    target.append("alice", "web", original[:2])
    result = import_log(target, "alice", export_log(source, "alice", "web", "jsonl").data)
    assert (result.added, result.already_present) == (3, 2)
    assert target.read("alice", "web").entries == original


def test_a_file_with_a_bad_line_imports_nothing(tmp_path: Path) -> None:
    source = fix_store(tmp_path / "one")
    original = _build_log(source)
    data = export_log(source, "alice", "web", "jsonl").data + b'{"id": "nope"}\n'
    target = fix_store(tmp_path / "two")
    with pytest.raises(ImportRefused) as refused:
        import_log(target, "alice", data)
    assert [p.line for p in refused.value.problems] == [len(original) + 1]
    assert "nothing imported" in str(refused.value)
    assert target.projects("alice") == []


def test_import_routes_entries_to_their_projects_and_can_insist_on_one(tmp_path: Path) -> None:
    data = b"".join(jsonl_lines([entry(1, project="web"), entry(2, project="api")]))
    store = fix_store(tmp_path)
    with pytest.raises(ImportRefused, match="entry of project 'api', not 'web'"):
        import_log(store, "alice", data, project="web")
    result = import_log(store, "alice", data)
    assert result.projects == ("web", "api")
    assert store.projects("alice") == ["api", "web"]


def test_import_reports_entries_the_store_wrote_differently(tmp_path: Path) -> None:
    # A log written by another tool: a reworded retry without ``supersedes``. The store reconciles it
    # on the way in, and the import says so instead of passing it off as an exact copy.
    older = entry(1, task="fix login timeout")
    retry = entry(2, task="fix the login timeout bug")
    secret = entry(3, files=["x.py"], errors=[], solution="token=abcdef123456 rotated")
    store = fix_store(tmp_path)
    result = import_log(store, "alice", b"".join(jsonl_lines([older, retry, secret])))
    assert result.changed == (retry.id, secret.id)
    stored = {e.id: e for e in store.read("alice", "web").entries}
    assert stored[retry.id].supersedes == older.id
    assert "abcdef123456" not in stored[secret.id].solution
