"""Publishing for the reliability runs: raw ``XADD`` (as a hostile harness would), in bulk or paced.

``publish_all`` sends items in pipelined chunks. ``Pacer`` publishes from a thread at a steady rate and
rides out a Redis outage the way a careful harness does: it gives each event its own stream id
(``<start ms>-<n>``) and retries the same id until Redis either takes it or says it already has it
("equal or smaller than the top item"), so an event acknowledged before a crash is never sent twice
and an event is counted as acknowledged only once Redis really holds it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

import redis

from ingest import keys
from tests.reliability.corpus import Item
from tests.reliability.ledger import Published

CHUNK = 500


def publish_all(
    client: redis.Redis, items: Iterable[Item], *, stream: str = keys.DEFAULT_STREAM
) -> list[Published]:
    """XADD every item (pipelined, ``CHUNK`` a round trip); returns them with their stream ids."""
    out: list[Published] = []
    batch: list[Item] = []

    def flush() -> None:
        with client.pipeline(transaction=False) as pipe:
            for item in batch:
                pipe.xadd(stream, dict(item.fields))  # type: ignore[arg-type]
            ids = pipe.execute()
        out.extend(Published(i.decode(), item) for i, item in zip(ids, batch, strict=True))
        batch.clear()

    for item in items:
        batch.append(item)
        if len(batch) >= CHUNK:
            flush()
    if batch:
        flush()
    return out


class Pacer:
    """Publish ``items`` at ``rate`` events/s from a thread; ``published`` holds the acknowledged ones."""

    def __init__(
        self, url: str, items: Sequence[Item], *, rate: float, stream: str = keys.DEFAULT_STREAM
    ) -> None:
        self.url = url
        self.items = items
        self.rate = rate
        self.stream = stream
        self.published: list[Published] = []
        self.retries = 0
        self.outage_seconds = 0.0
        self.finished_at = 0.0  # time.monotonic() when the last event was acknowledged
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="pacer", daemon=True)

    def start(self) -> Pacer:
        self._thread.start()
        return self

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"the publisher did not finish within {timeout:.0f}s")
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            client = redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)
            start_ms = int(time.time() * 1000)
            started = time.monotonic()
            for n, item in enumerate(self.items):
                due = started + n / self.rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                stream_id = f"{start_ms}-{n + 1}"
                self._send(client, stream_id, item)
                self.published.append(Published(stream_id, item))
            self.finished_at = time.monotonic()
        except BaseException as exc:  # reported by join()
            self.error = exc
        finally:
            self.done.set()

    def _send(self, client: redis.Redis, stream_id: str, item: Item) -> None:
        down_since: float | None = None
        while True:
            try:
                client.xadd(self.stream, dict(item.fields), id=stream_id)  # type: ignore[arg-type]
            except redis.exceptions.ResponseError as exc:
                if "equal or smaller" not in str(exc):
                    raise
                # An earlier attempt landed (its reply was lost): Redis holds it.
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                    redis.exceptions.BusyLoadingError):  # fmt: skip
                self.retries += 1
                down_since = down_since or time.monotonic()
                time.sleep(0.1)
                continue
            if down_since is not None:
                self.outage_seconds += time.monotonic() - down_since
            return
