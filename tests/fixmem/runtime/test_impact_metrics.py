"""The impact series: bounded labels, the values of the report, computed at most once per ttl, absent
(never a failed scrape) when the logs cannot be read."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from fixmem.runtime.impact_metrics import ImpactCollector, impact_families
from store.impact import ImpactReport, SessionOutcome, report


def sample() -> ImpactReport:
    memory = [
        SessionOutcome(f"m{n}", "p", "memory", 1.0, n < 6, None, n < 6, ("f",), ("f",) if n < 3 else ())
        for n in range(8)
    ]
    held = [SessionOutcome(f"h{n}", "p", "holdback", 1.0, n < 1, None, n < 1, ("f",), ()) for n in range(4)]
    held[3] = SessionOutcome("h3", "p", "holdback", 1.0, False, None, False, ("f",), (), no_entry=True)
    return report(memory + held)


def test_the_families_carry_the_report_with_bounded_labels() -> None:
    registry = CollectorRegistry()
    registry.register(ImpactCollector(sample))
    get = registry.get_sample_value
    assert get("fixmem_impact_sessions", {"arm": "memory"}) == 8
    assert get("fixmem_impact_sessions", {"arm": "holdback"}) == 4
    assert get("fixmem_impact_fixed_ratio", {"arm": "memory", "measure": "outcome"}) == 6 / 8
    assert get("fixmem_impact_follow_ratio", {"arm": "memory"}) == 3 / 8
    assert get("fixmem_impact_no_entry_ratio", {"arm": "holdback"}) == 1 / 4  # no file edited, not fixed
    assert get("fixmem_impact_no_entry_ratio", {"arm": "memory"}) == 0
    assert get("fixmem_impact_lift_ratio", {"measure": "outcome", "bound": "estimate"}) == 6 / 8 - 1 / 4
    assert get("fixmem_impact_lift_ratio", {"measure": "verdict", "bound": "low"}) is None  # no verdicts
    labels = {k for f in impact_families(sample()) for s in f.samples for k in s.labels}
    assert labels <= {"arm", "measure", "bound"}


def test_computed_once_per_ttl_and_absent_when_it_fails() -> None:
    calls: list[int] = []
    now = [0.0]

    def compute() -> ImpactReport:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("log unreadable")
        return sample()

    collector = ImpactCollector(compute, ttl=60.0, clock=lambda: now[0])
    assert list(collector.collect()) and list(collector.collect()) and len(calls) == 1
    now[0] = 61.0
    assert list(collector.collect()) == []  # the failure: no series this scrape
    assert list(collector.collect()) and len(calls) == 3
