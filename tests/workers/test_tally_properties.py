"""Property: whatever the interleaving, the fleet's ``recorded`` by outcome = the lines the log gained.

A small model of a fleet drives the pure ``tally``: one project log (some ids there before), one to three
batches whose events repeat ids (a harness retried, within a batch or across batches, copies differing
in outcome), each batch going through the steps ``run_batch`` takes — register its ids and read the log
(``present``, saved for every later attempt), append, claim the ids it wrote, count — with an optional
attempt killed after its append (the re-run appends again and counts), all steps of all batches in an
order Hypothesis picks. The store's append and the claim hash are modelled after ``FixStore.append``
(first copy of an id not in the log is added, the rest are duplicates) and the ``_CLAIM`` / ``_RELEASE``
scripts (the first batch to claim an id counts it; the claim lives while a batch that registered the id
is unfinished).

The oracle is the model log itself: which lines were added, with which outcome — never the report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from ingest.errors import DeadLetterReason
from store import AppendResult, FixEntry
from workers.counters import BatchReport
from workers.jobs import Decision, tally, written_ids

OUTCOMES = ("fixed", "partial", "unverified")


def _entry(n: int, outcome: str) -> FixEntry:
    return FixEntry.model_validate({
        "id": f"fix-{n:016x}", "ts": 1.7e9, "project": "p", "task": "t", "files": ["a.py"], "symbols": [],
        "errors": [], "tests": None, "outcome": outcome, "solution": "", "tags": [],
    })  # fmt: skip


@dataclass
class Log:
    """The model of one project's log: id -> the entry as written."""

    lines: dict[str, FixEntry] = field(default_factory=dict)

    def append(self, entries: list[FixEntry]) -> AppendResult:
        added: list[FixEntry] = []
        duplicates: list[str] = []
        for e in entries:
            if e.id in self.lines:
                duplicates.append(e.id)
            else:
                self.lines[e.id] = e
                added.append(e)
        return AppendResult(added, duplicates, [], 0)


@dataclass
class Batch:
    name: str
    decisions: list[Decision]
    steps: list[str]  # what is left to do, in order
    present: frozenset[str] | None = None
    results: list[AppendResult] = field(default_factory=list)
    report: BatchReport | None = None

    @property
    def ids(self) -> set[str]:
        return {d.entry.id for d in self.decisions if d.entry is not None}


@dataclass
class Claims:
    """The model of fixmem:count:inflight and fixmem:count:owner."""

    inflight: Counter[str] = field(default_factory=Counter)
    owner: dict[str, str] = field(default_factory=dict)

    def register(self, ids: set[str]) -> None:
        self.inflight.update(ids)

    def claim(self, batch: str, ids: set[str]) -> set[str]:
        """The ids another batch counts."""
        return {i for i in ids if self.owner.setdefault(i, batch) != batch}

    def release(self, ids: set[str]) -> None:
        for i in ids:
            self.inflight[i] -= 1
            if self.inflight[i] <= 0:
                del self.inflight[i]
                self.owner.pop(i, None)


def step(batch: Batch, log: Log, claims: Claims) -> None:
    what = batch.steps.pop(0)
    if what == "start":  # register, then read the log; saved for every later attempt
        claims.register(batch.ids)
        batch.present = frozenset(i for i in batch.ids if i in log.lines)
    elif what in ("append", "append and die"):  # one append (one project): the events' entries in order
        result = log.append([d.entry for d in batch.decisions if d.entry is not None])
        batch.results = [result]  # a killed attempt's answers die with it
    else:  # claim, count, release
        assert batch.present is not None
        written = written_ids(batch.results, batch.present)
        added = {e.id for r in batch.results for e in r.added}
        on_disk = {i: log.lines[i] for i in written - added}
        batch.report = tally(
            batch.decisions, batch.results, written_at=1.8e9, duration_seconds=0.0, present=batch.present,
            on_disk=on_disk, counted_elsewhere=claims.claim(batch.name, written),
        )  # fmt: skip
        claims.release(batch.ids)


EVENT = st.tuples(st.integers(0, 4), st.sampled_from(OUTCOMES)) | st.sampled_from(["skip", "dead"])


@st.composite
def fleets(draw: st.DrawFn) -> tuple[dict[str, FixEntry], list[Batch], list[int]]:
    before = {
        f"fix-{n:016x}": _entry(n, draw(st.sampled_from(OUTCOMES)))
        for n in draw(st.sets(st.integers(0, 4), max_size=3))
    }
    batches = []
    for b in range(draw(st.integers(1, 3))):
        decisions = []
        for k, event in enumerate(draw(st.lists(EVENT, min_size=1, max_size=6))):
            sid = f"{1_700_000_000_000 + 100 * b + k}-0"
            if event == "skip":
                decisions.append(Decision(sid, b"{}", skip="skipped_no_files"))
            elif event == "dead":
                decisions.append(Decision(sid, b"{", dead=DeadLetterReason.INVALID_JSON, error="bad"))
            else:
                n, outcome = event
                decisions.append(Decision(sid, b"{}", "alice", "p", entry=_entry(n, outcome)))
        killed = draw(st.booleans())
        steps = ["start", *(["append and die"] if killed else []), "append", "count"]
        batches.append(Batch(f"b{b}", decisions, steps))
    order = draw(st.permutations([i for i, b in enumerate(batches) for _ in b.steps]))
    return before, batches, order


@given(fleets())
def test_recorded_by_outcome_equals_the_lines_the_log_gained(
    fleet: tuple[dict[str, FixEntry], list[Batch], list[int]],
) -> None:
    before, batches, order = fleet
    log = Log(dict(before))
    claims = Claims()
    for i in order:
        step(batches[i], log, claims)

    gained = Counter(e.outcome for i, e in log.lines.items() if i not in before)
    reports = [b.report for b in batches]
    assert all(r is not None for r in reports)
    recorded: Counter[str] = Counter()
    events: Counter[str] = Counter()
    for r in reports:
        assert r is not None
        recorded.update(r.entries)
        events.update(r.events)
    assert +recorded == +gained
    assert events["recorded"] == sum(gained.values())
    with_entries = sum(d.entry is not None for b in batches for d in b.decisions)
    assert events["recorded"] + events["duplicate"] == with_entries
    assert claims == Claims()  # nothing left behind once every batch is done
