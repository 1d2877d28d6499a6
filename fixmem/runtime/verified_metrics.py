"""Prometheus series of what the fix logs hold now: claimed and verified outcomes (issue 30).

``verified_families(summaries)`` is pure: the ``LogSummary`` of every project of the API's token owners
in, gauges out, labelled by ``outcome`` only (never a project or an owner):

- ``fixmem_stored_entries{outcome}``: entries the logs hold, by the agent's own label (what it claimed);
- ``fixmem_verified_entries{outcome}``: entries whose outcome a verdict in effect decided, by that outcome.

The ratios ops watch are recording rules over them (``deploy/prometheus/rules.yml``): verdict coverage
(verified / stored), the claimed fixed ratio and the verified one (fixed among the verified). They are
counts of the store, not of events: each log's summary file is rewritten by every write (appends,
verdicts, rotation, ``forget``), so they always equal a recount of the logs
(docs/decisions/0061-verified-counts-from-the-store.md). ``VerifiedCollector`` reads the summaries at
most once a minute (``CachedCollector``): one small file per project.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from fixmem.runtime.cached_collector import TTL_SECONDS, CachedCollector
from store.entry import OUTCOMES
from store.summary import LogSummary


def verified_families(summaries: Iterable[LogSummary]) -> list[Metric]:
    """The stored and verified entry counts of ``summaries``, every outcome present (0 included)."""
    claimed: Counter[str] = Counter()
    verified: Counter[str] = Counter()
    for summary in summaries:
        claimed.update(summary.claimed)
        verified.update(summary.verified)
    stored = GaugeMetricFamily(
        "fixmem_stored_entries",
        "Entries the fix logs of the API's owners hold now, by the agent's own outcome label (claimed).",
        labels=["outcome"],
    )
    judged = GaugeMetricFamily(
        "fixmem_verified_entries",
        "Entries whose outcome a verdict in effect decided (CI, review, revert, merge, benchmark), by that "
        "outcome.",
        labels=["outcome"],
    )
    for outcome in OUTCOMES:
        stored.add_metric([outcome], float(claimed[outcome]))
        judged.add_metric([outcome], float(verified[outcome]))
    return [stored, judged]


class VerifiedCollector(CachedCollector):
    """The families of ``summaries()``, read at most every ``ttl`` seconds; none when it fails."""

    def __init__(
        self,
        summaries: Callable[[], Iterable[LogSummary]],
        *,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            lambda: verified_families(summaries()), what="the verified counts", ttl=ttl, clock=clock
        )
