"""A collector whose families are computed from the fix logs at most once per ``ttl`` seconds.

The impact series (``impact_metrics``) and the claimed/verified counts (``verified_metrics``) read the
logs (or their summary files) of the API's token owners at scrape time; however often Prometheus
scrapes, they are read at most once a minute. A failure leaves the series out of that scrape and never
fails it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Final

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

log = logging.getLogger("fixmem.metrics")
TTL_SECONDS: Final = 60.0


class CachedCollector(Collector):
    """The families ``families()`` gives, recomputed at most every ``ttl`` seconds; none when it fails."""

    def __init__(
        self,
        families: Callable[[], list[Metric]],
        *,
        what: str,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.families, self.what, self.ttl, self.clock = families, what, ttl, clock
        self._lock = threading.Lock()
        self._kept: tuple[float, list[Metric]] | None = None

    def describe(self) -> Iterable[Metric]:
        """Nothing up front: registering must not read the logs."""
        return []

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            now = self.clock()
            if self._kept is None or now - self._kept[0] >= self.ttl:
                try:
                    self._kept = (now, self.families())
                except Exception as exc:  # a scrape never fails for it: the series are absent this time
                    log.warning("metrics: %s could not be computed: %s", self.what, exc)
                    return []
            return self._kept[1]
