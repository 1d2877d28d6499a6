"""The consumer's schedule: what ``ingest.consumer.Consumer.run`` does next, decided from values.

Rules this module obeys (h11's "no I/O" rule, applied to a loop):

- No I/O at all: no Redis, no clock, no sleeping, no logging. The caller passes ``now`` (monotonic
  seconds) and what Redis answered (queue lengths, how much a read returned); it gets back decisions
  (frozen values) and does the I/O they name.
- The schedule's state is values the caller keeps and hands back (the claim and trim timers, when each
  paused queue's pause began), plus ``BurstWait``'s two fields: nothing hides in module globals.
- The decisions are the consumer's documented behaviour (``ingest.consumer``'s docstring):
  1. claim idle pending entries every ``claim_interval`` s and trim every ``trim_interval`` s, both at once
     on the first pass;
  2. a queue holding more than ``backpressure_jobs`` jobs pauses its stream; it resumes when the queue is
     back at or under it; a pause of ``LONG_PAUSE_SECONDS`` or more is worth an INFO line when it ends;
  3. a cycle gathers at most ``batch_max_events`` (and at most what ``max_events`` leaves); its first read
     asks ``read_count`` per stream and blocks ``read_block_ms`` (never in burst mode; at most a poll,
     ``POLL_SECONDS``, while another stream is paused); while a read filled its count and the cycle
     wants more, the streams that filled it are read again without blocking;
  4. with every queue over its threshold, nothing is read: the caller waits a poll (at most the block);
  5. a run ends when it handled ``max_events``; a burst run ends when a read finds nothing and no paused
     stream holds unread entries, or when no paused queue got shorter for ``burst_max_wait_seconds``
     (then it says why); while it waits on paused queues and the open streams' reads did not block, it
     waits a poll between cycles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

POLL_SECONDS = 0.05  # how often a paused consumer checks the queues again (one LLEN pipeline)
LONG_PAUSE_SECONDS = 5.0  # a backpressure pause this long is logged at INFO when it ends (shorter: DEBUG)


@dataclass(frozen=True, slots=True)
class Chores:
    """Whether to claim idle pending entries and trim the streams now, and the timers afterwards."""

    claim: bool
    trim: bool
    next_claim: float
    next_trim: float


def chores(
    now: float, *, next_claim: float, next_trim: float, claim_interval: float, trim_interval: float
) -> Chores:
    """Rule 1: what falls due at ``now``; a chore done now is due again ``*_interval`` s later."""
    claim, trim = now >= next_claim, now >= next_trim
    return Chores(
        claim=claim,
        trim=trim,
        next_claim=now + claim_interval if claim else next_claim,
        next_trim=now + trim_interval if trim else next_trim,
    )


@dataclass(frozen=True, slots=True)
class Pressure:
    """Rule 2 applied to one check of the queues, route by route (in the caller's order)."""

    open: tuple[int, ...]  # the routes whose queue has room, to read from
    paused: Mapping[str, float]  # queue -> when its pause began, after this check
    began: tuple[int, ...]  # routes whose pause began at this check
    ended: tuple[tuple[int, float], ...]  # routes whose pause ended, with how long it lasted (s)


def pressure(
    lengths: Sequence[tuple[str, int]], paused: Mapping[str, float], *, threshold: int, now: float
) -> Pressure:
    """Rule 2: each route's (queue, jobs waiting) against ``threshold``, given the pauses so far."""
    state = dict(paused)
    open_routes: list[int] = []
    began: list[int] = []
    ended: list[tuple[int, float]] = []
    for index, (queue, jobs) in enumerate(lengths):
        if jobs > threshold:
            if queue not in state:
                state[queue] = now
                began.append(index)
            continue
        if queue in state:
            ended.append((index, now - state.pop(queue)))
        open_routes.append(index)
    return Pressure(tuple(open_routes), state, tuple(began), tuple(ended))


def long_pause(seconds: float) -> bool:
    """Rule 2: whether a pause that lasted ``seconds`` is worth an INFO line (shorter ones are the rhythm)."""
    return seconds >= LONG_PAUSE_SECONDS


@dataclass(frozen=True, slots=True)
class Read:
    """One XREADGROUP: ``count`` per stream, blocking ``block_ms`` (None: not at all)."""

    count: int
    block_ms: int | None


def wanted(limit: int | None, batch_max_events: int) -> int:
    """Rule 3: the most entries a cycle gathers (``limit``: what ``max_events`` leaves, None: no limit)."""
    return batch_max_events if limit is None else min(limit, batch_max_events)


def first_read(
    *, wanted: int, read_count: int, read_block_ms: int, block: bool, open_routes: int, routes: int
) -> Read | None:
    """Rules 3 and 4: a cycle's first read, or None when every queue is paused (wait ``idle_seconds``)."""
    if not open_routes:
        return None
    block_ms = read_block_ms
    # While a queue is paused, block only as long as a paused consumer polls: a read blocking
    # read_block_ms on the other (empty) stream held live events back that long every cycle under a
    # steady flow, once the live queue passed the threshold (docs/performance.md, "A paused queue").
    if open_routes < routes:
        block_ms = min(block_ms, int(POLL_SECONDS * 1000))
    return Read(min(read_count, wanted), block_ms if block else None)


def idle_seconds(read_block_ms: int) -> float:
    """Rule 4: how long to wait when every queue is paused (with a low threshold one drains in well
    under a second)."""
    return min(POLL_SECONDS, read_block_ms / 1000)


def next_read(*, wanted: int, gathered: int, filled: bool, read_count: int) -> Read | None:
    """Rule 3: read again (without blocking) the streams that filled their count, while the cycle wants
    more; None: the cycle is gathered."""
    if not filled or gathered >= wanted:
        return None
    return Read(min(read_count, wanted - gathered), None)


@dataclass(frozen=True, slots=True)
class AfterCycle:
    """What a cycle's outcome means for the run."""

    done: bool  # rule 5: ``max_events`` handled
    check_burst: bool  # burst mode read nothing: ask which paused streams hold unread entries
    progress: bool  # entries were handled: the backoff and the burst wait start over


def after_cycle(*, got: int, handled: int, max_events: int | None, burst: bool) -> AfterCycle:
    """Rule 5, first half: after a cycle that handled ``got`` entries (``handled`` since the start)."""
    done = max_events is not None and handled >= max_events
    return AfterCycle(done=done, check_burst=not done and burst and got == 0, progress=got > 0)


class PausedRoute(Protocol):
    """A route as the burst wait sees it (``ingest.consumer.Route``)."""

    @property
    def queue(self) -> str: ...

    @property
    def stream(self) -> str: ...


R = TypeVar("R", bound=PausedRoute)


class BurstWait:
    """How long a burst run has waited on paused queues without any of them getting shorter."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.lowest: dict[str, int] = {}

    def reset(self) -> None:
        self.since = None
        self.lowest = {}

    def check(self, paused: Mapping[R, int], now: float, limit: float, threshold: int) -> str | None:
        """Note the paused queues' lengths; the reason to stop once none got shorter in ``limit`` s."""
        moved = any(jobs < self.lowest.get(r.queue, jobs + 1) for r, jobs in paused.items())
        if self.since is None or moved:
            self.since = now
            self.lowest = {r.queue: jobs for r, jobs in paused.items()}
            return None
        if now - self.since < limit:
            return None
        held = "; ".join(
            f"queue {r.queue} holds {jobs} jobs (> {threshold}, backpressure), {r.stream} unread"
            for r, jobs in paused.items()
        )
        return f"{held}; no worker took a job for {limit:g}s: start workers (`fixmem worker`) and run again"


@dataclass(frozen=True, slots=True)
class BurstStep:
    """Rule 5, second half: whether a burst run that read nothing stops, why, and how long it waits."""

    done: bool
    reason: str | None = None  # why it stopped with entries left unread
    wait_seconds: float | None = None  # a poll before the next cycle (None: go on at once)


def burst_step(
    paused: Mapping[R, int],
    wait: BurstWait,
    *,
    now: float,
    limit: float,
    threshold: int,
    routes: int,
) -> BurstStep:
    """Rule 5: given the paused routes whose stream holds unread entries (-> their queue's jobs)."""
    if not paused:
        return BurstStep(done=True)
    reason = wait.check(paused, now, limit, threshold)
    if reason is not None:
        return BurstStep(done=True, reason=reason)
    return BurstStep(done=False, wait_seconds=POLL_SECONDS if len(paused) < routes else None)
