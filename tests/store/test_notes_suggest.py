"""The review queue: suggestions from the fix log (read-only) and a fix promoted into a note."""

from __future__ import annotations

from datetime import date

import pytest

from store import FixEntry, TestRun, entry_id
from store.history import regressions
from store.notes import NoteRejected, append_separator, format_note, parse_memory
from store.notes.suggest import note_from_fix, promoted_ids, suggest_notes

DAY = 86_400.0
T0 = 1_780_000_000.0  # 2026-05-28


def entry(
    n: int,
    outcome: str = "fixed",
    errors: tuple[str, ...] = ("TimeoutError: login timed out after 30 seconds",),
    files: tuple[str, ...] = ("src/login.py",),
    task: str = "",
    **extra: object,
) -> FixEntry:
    return FixEntry.model_validate(
        {
            "id": entry_id("o", "p", f"turn-{n}"),
            "ts": T0 + n * DAY,
            "project": "p",
            "task": task or f"task {n}",
            "files": list(files),
            "symbols": [],
            "errors": list(errors),
            "tests": None,
            "outcome": outcome,
            "solution": f"solution {n}",
            "tags": [],
            **extra,
        }
    )


def suggest(entries: list[FixEntry], **kwargs: object) -> list[tuple[str, str, tuple[str, ...]]]:
    found = suggest_notes(entries, regressed=regressions(entries), **kwargs)  # type: ignore[arg-type]
    return [(s.fix_id, s.reason, s.evidence) for s in found]


def test_the_same_error_fixed_three_times_is_suggested() -> None:
    log = [
        entry(1, errors=("TimeoutError: login timed out after 30 seconds",), files=("a.py",)),
        entry(2, errors=("ValueError: other",), files=("b.py",)),
        entry(3, errors=("TimeoutError: login timed out after 45 seconds",), files=("c.py",)),
        entry(4, errors=("timeouterror:  login timed out after 5 seconds",), files=("d.py",)),
    ]
    found = suggest_notes(log, regressed=regressions(log))
    assert len(found) == 1
    (only,) = found
    assert only.kind == "gotcha"
    assert only.fix_id == log[3].id  # the latest fix is the one to promote
    assert only.evidence == (log[0].id, log[2].id, log[3].id)
    assert only.reason == "fixed 3 times, 2026-05-29 to 2026-06-01"
    assert only.subject == "keeps coming back: TimeoutError: login timed out after 30 seconds"


@pytest.mark.parametrize(
    "outcomes",
    [
        ("fixed", "fixed"),  # twice is not yet a pattern
        ("fixed", "fixed", "unverified"),  # only fixes count
    ],
)
def test_fewer_than_three_fixes_suggest_nothing(outcomes: tuple[str, ...]) -> None:
    log = [entry(i, outcome=o, files=(f"f{i}.py",)) for i, o in enumerate(outcomes)]
    assert suggest(log) == []


def test_the_threshold_is_a_parameter() -> None:
    log = [entry(i, files=(f"f{i}.py",)) for i in range(2)]
    assert len(suggest(log, min_repeats=2)) == 1


def test_a_fix_that_later_regressed_is_suggested() -> None:
    log = [entry(1, task="fix the login timeout"), entry(2, outcome="partial", task="login times out again")]
    found = suggest_notes(log, regressed=regressions(log))
    assert [(s.fix_id, s.evidence) for s in found] == [(log[0].id, (log[0].id, log[1].id))]
    assert found[0].subject == "a fix that did not hold: fix the login timeout"
    assert found[0].reason == f"fixed on 2026-05-29, then {log[1].id} failed again on 2026-05-30"


def test_one_failure_undoing_several_fixes_is_one_suggestion() -> None:
    log = [entry(i, files=(f"f{i}.py",)) for i in range(3)] + [entry(9, outcome="partial")]
    found = suggest_notes(log, regressed=regressions(log))
    assert len(found) == 1  # the regression and the repeat point at the same fix: merged
    assert found[0].fix_id == log[2].id
    assert found[0].evidence == (log[0].id, log[1].id, log[2].id, log[3].id)
    assert found[0].reason == (
        f"fixed on 2026-05-30 (and 2 earlier fix(es)), then {log[3].id} failed again on 2026-06-06; "
        "fixed 3 times, 2026-05-28 to 2026-05-30"
    )


def test_promoted_fixes_are_not_suggested_again() -> None:
    log = [
        entry(1, errors=("KeyError: user",), files=("a.py",)),
        entry(2, outcome="partial", errors=("KeyError: user",), files=("a.py",)),
        *(entry(i, files=(f"f{i}.py",)) for i in range(3, 6)),
    ]
    assert [fix_id for fix_id, _, _ in suggest(log)] == [log[0].id, log[4].id]
    note = note_from_fix(log[4], "gotcha", learned=date(2026, 6, 1), commit=None)
    memory = parse_memory(format_note(note))
    assert promoted_ids(memory) == {log[4].id}
    remaining = suggest(log, already_promoted=promoted_ids(memory))
    assert [fix_id for fix_id, _, _ in remaining] == [log[0].id]  # the regression is still open


def test_promoting_one_suggestion_leaves_another_that_lists_its_fix_as_evidence() -> None:
    log = [
        entry(1, files=("a.py",)),
        entry(2, outcome="partial", files=("a.py",)),  # undoes fix 1: "a fix that did not hold"
        entry(3, files=("c.py",)),
        entry(4, files=("d.py",)),  # the timeout fixed 3 times (1, 3, 4): "keeps coming back"
    ]
    assert [(fix_id, evidence) for fix_id, _, evidence in suggest(log)] == [
        (log[0].id, (log[0].id, log[1].id)),
        (log[3].id, (log[0].id, log[2].id, log[3].id)),
    ]
    promoted = {log[0].id}  # the person promoted the first suggestion only
    remaining = suggest(log, already_promoted=promoted)
    assert [(fix_id, evidence) for fix_id, _, evidence in remaining] == [
        (log[3].id, (log[0].id, log[2].id, log[3].id))
    ]
    assert suggest(log, already_promoted={log[0].id, log[3].id}) == []


def test_suggesting_reads_and_changes_nothing() -> None:
    log = [entry(i, files=(f"f{i}.py",)) for i in range(4)]
    before = [e.model_copy(deep=True) for e in log]
    suggest(log)
    assert log == before


def test_a_fix_becomes_a_note_with_its_source_named() -> None:
    fix = entry(
        7,
        task="Fix the login timeout\n(the one on staging)",
        files=("src/login.py", "src/session.py"),
        tests=TestRun(command="pytest tests/test_login.py", ok=True, summary="3 passed"),
    ).model_copy(update={"solution": "Raised the timeout; password=hunter2hunter2 in the log"})
    note = note_from_fix(fix, "Decision", learned=date(2026, 6, 5), commit="abc1234")
    assert (note.kind, note.subject, note.learned, note.commit) == (
        "decision",
        "Fix the login timeout (the one on staging)",
        date(2026, 6, 5),
        "abc1234",
    )
    assert note.body.split("\n") == [
        "Solution: Raised the timeout; password=[REDACTED] in the log",
        "Error: TimeoutError: login timed out after 30 seconds",
        "Files: src/login.py, src/session.py",
        "Tests: pytest tests/test_login.py passed (3 passed)",
        f"Promoted from {fix.id} (fixed, 2026-06-04).",
    ]
    text = "# memory\n" + append_separator("# memory\n") + format_note(note)
    assert parse_memory(text).notes[0].body == note.body


def test_promotion_refuses_an_unknown_kind_and_takes_a_subject() -> None:
    with pytest.raises(NoteRejected, match="'diary' is not a kind"):
        note_from_fix(entry(1), "diary", learned=date(2026, 6, 5), commit=None)
    assert note_from_fix(entry(1), "gotcha", learned=None, commit=None, subject="mine").subject == "mine"  # type: ignore[arg-type]
    with pytest.raises(NoteRejected, match="subject is empty"):
        note_from_fix(entry(1, task="   "), "gotcha", learned=date(2026, 6, 5), commit=None)
