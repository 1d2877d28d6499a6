"""Prometheus series of the impact measurement: does fix recall help the fleet? (``store.impact``).

``impact_families(report)`` is pure: the report of the sessions that ended in the last ``WINDOW_SECONDS``
in, gauges out; labels are bounded (``arm``: memory, holdback; ``measure``: outcome, verdict, claimed;
``bound``: estimate, low, high), never a project or an owner. ``ImpactCollector`` computes the report at
scrape time from a callable (the API reads the fix logs of its tokens' owners) and keeps it for
``ttl`` seconds: the logs are read at most once a minute, however often Prometheus scrapes.

- ``fixmem_impact_sessions{arm}``: sessions per arm;
- ``fixmem_impact_fixed_ratio{arm,measure}``: the fixed ratio (outcome: verdict-backed where a verdict
  exists; verdict: sessions with a verdict only; claimed: the agents' own tests);
- ``fixmem_impact_follow_ratio{arm}``: fixes followed over fixes shown (the shadow, in holdback);
- ``fixmem_impact_no_entry_ratio{arm}``: sessions none of whose turns made an entry (counted not fixed);
- ``fixmem_impact_lift_ratio{measure,bound}``: memory minus holdback with the 95% Newcombe interval;
- ``fixmem_impact_sessions_needed``: sessions a 10-point lift needs at the observed share and base.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from prometheus_client.core import GaugeMetricFamily, Metric

from fixmem.runtime.cached_collector import TTL_SECONDS, CachedCollector
from store.impact import MEASURES, ImpactReport

WINDOW_SECONDS: Final = 30 * 86400.0  # the sessions the series describe: those ended in the last 30 days


def impact_families(report: ImpactReport) -> list[Metric]:
    """The impact gauges of ``report``."""
    sessions = GaugeMetricFamily(
        "fixmem_impact_sessions", "Agent sessions per arm (last 30 days).", labels=["arm"]
    )
    fixed = GaugeMetricFamily(
        "fixmem_impact_fixed_ratio",
        "Sessions that ended fixed, per arm and measure (outcome, verdict, claimed), 0..1 (last 30 days).",
        labels=["arm", "measure"],
    )
    follow = GaugeMetricFamily(
        "fixmem_impact_follow_ratio",
        "Fixes shown (shadow in holdback) that the agent followed, 0..1.",
        labels=["arm"],
    )
    no_entry = GaugeMetricFamily(
        "fixmem_impact_no_entry_ratio",
        "Sessions none of whose turns made an entry (no file edited; counted not fixed), per arm, 0..1.",
        labels=["arm"],
    )
    for arm, summary in report.arms.items():
        sessions.add_metric([arm], summary.sessions)
        if summary.sessions:
            no_entry.add_metric([arm], summary.no_entry / summary.sessions)
        for measure in MEASURES:
            ratio = summary.ratio(measure)
            if ratio is not None:
                fixed.add_metric([arm, measure], ratio)
        if summary.follow_rate is not None:
            follow.add_metric([arm], summary.follow_rate)
    lift = GaugeMetricFamily(
        "fixmem_impact_lift_ratio",
        "Fixed ratio of memory sessions minus holdback sessions, with its 95% Newcombe interval (bound).",
        labels=["measure", "bound"],
    )
    for measure, found in report.lifts.items():
        if found is not None:
            for bound, value in (("estimate", found.difference), ("low", found.low), ("high", found.high)):
                lift.add_metric([measure, bound], value)
    needed = GaugeMetricFamily(
        "fixmem_impact_sessions_needed",
        "Sessions (both arms) a 10-point lift needs at the observed holdback share and base ratio.",
        report.needed if report.needed is not None else float("nan"),
    )
    return [sessions, fixed, follow, no_entry, lift, needed]


class ImpactCollector(CachedCollector):
    """The impact families of ``compute()``, recomputed at most every ``ttl`` seconds; none when it fails."""

    def __init__(
        self,
        compute: Callable[[], ImpactReport],
        *,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.compute = compute
        super().__init__(lambda: impact_families(compute()), what="the impact", ttl=ttl, clock=clock)
