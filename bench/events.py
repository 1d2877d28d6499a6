"""Generating the suite's events once: realistic turns from ``bench.generator``, made in parallel.

Making 60,000 realistic events takes ~30 s of one core, so they are made once per suite run (by a pool of
``cpus()`` processes), before any clock starts, and shared by the benchmarks that publish events.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from bench.common import cpus
from bench.corpus import quantiles
from bench.generator import TurnGenerator

SEED = 7
PROJECTS = 50
OWNERS = 5
CHUNK = 2_000


def _chunk(args: tuple[int, int, int, int]) -> list[bytes]:
    seed, projects, start, stop = args
    return list(TurnGenerator(seed, projects=projects, owners=OWNERS).wires(start, stop))


def make_events(count: int, *, seed: int = SEED, projects: int = PROJECTS) -> list[bytes]:
    """Events ``0 … count - 1`` of ``TurnGenerator(seed, projects=projects)``, as wire bytes, in order."""
    spans = [(seed, projects, s, min(count, s + CHUNK)) for s in range(0, count, CHUNK)]
    if len(spans) <= 1 or cpus() < 2:
        return [raw for span in spans for raw in _chunk(span)]
    with ProcessPoolExecutor(max_workers=cpus()) as pool:
        return [raw for chunk in pool.map(_chunk, spans) for raw in chunk]


@dataclass(frozen=True)
class EventStats:
    """Sizes of a set of events (bytes on the wire)."""

    count: int
    mean_bytes: float
    quantiles_bytes: dict[str, float]

    @classmethod
    def of(cls, events: list[bytes]) -> EventStats:
        sizes = [float(len(e)) for e in events]
        q = quantiles(sizes)
        return cls(
            count=len(events),
            mean_bytes=round(sum(sizes) / max(1, len(sizes)), 1),
            quantiles_bytes={
                k: v for k, v in zip(("p0", "p10", "p25", "p50", "p75", "p90", "p100"), q, strict=True)
            },
        )
